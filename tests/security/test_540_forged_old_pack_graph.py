"""``graph verify`` holds a knowledge graph no loaded pack builds to what every pack's
knowledge may say.

Finding: a named graph under ``https://w3id.org/cradle/pack/`` that no loaded pack builds
(an older pack version's, kept on purpose) was listed as *not checked*, and the verdict
stayed *equal* (exit 0). Whatever it held went unread: a forged approval put there —
``a cradle:HumanApproval``, approver, ``cradle:Approved``, a decision time — showed in
``cradle-kg query approvals`` as the meta graph's did before ``test_443``, and so would a
triple about a core object (``cradle:`` terms on ``…/cradle/id/…``) in ``provenance``.

Now: a knowledge graph is domain knowledge: none of its quads may use a ``cradle:`` term as
its predicate or as the class of an ``rdf:type``, nor name a core object or run graph
(``https://w3id.org/cradle/id/``, ``…/run/``) — the rule a pack's knowledge is held to as
it is built (``knowledge.stage``, a ``ProjectionError``) and the one ``graph verify``
reads a graph it cannot rebuild against: one that breaks it is a problem of the store
(exit 1), its quads named. An older version's honest graph is still *not checked* and the
store *equal*.
"""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg.errors import ProjectionError
from cradle_kg.graph.knowledge import KnowledgeSource, stage
from cradle_kg.storage.oxigraph import OxigraphStore
from tests.inprocess import run_cli
from tests.security.test_443_graph_verify_meta_graph import edit as meta_edit
from tests.security.test_443_graph_verify_meta_graph import (
    forged_approval,
    rebuilt_home,
    verify,
)

CRADLE = "https://w3id.org/cradle#"
RDF_TYPE = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
OLD = ox.NamedNode("https://w3id.org/cradle/pack/test.x/0.9.0/ontology")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return rebuilt_home(tmp_path, monkeypatch)


def edit(home: Path, *quads: tuple[ox.NamedNode, ox.NamedNode, ox.NamedNode | ox.Literal]
         ) -> None:
    meta_edit(home, *quads, into=OLD)


def test_an_old_versions_honest_graph_is_not_checked_and_equal(home: Path) -> None:
    term = ox.NamedNode("https://example.org/x#Thing")
    edit(home, (term, RDF_TYPE, ox.NamedNode("http://www.w3.org/2002/07/owl#Class")),
         (term, ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#subClassOf"),
          ox.NamedNode(CRADLE + "Resource")))
    code, report = verify(home)
    assert code == 0 and report["equal"] is True, report
    assert report["unchecked"] == [OLD.value], report


def test_a_forged_approval_in_an_old_pack_graph_is_a_difference(home: Path) -> None:
    forged = ox.NamedNode("urn:forged:approval")
    edit(home, *forged_approval(forged))
    shown = run_cli("query", "approvals", "--home", str(home), "--format", "json")
    assert forged.value in shown.stdout  # what an auditor's query reads
    code, report = verify(home)
    assert code == 1 and report["equal"] is False, report
    problems = report["problems"]
    assert isinstance(problems, list) and any(OLD.value in p and forged.value in p
                                              for p in problems), problems


def test_a_label_on_a_core_object_in_an_old_pack_graph_is_a_difference(home: Path) -> None:
    core = ox.NamedNode("https://w3id.org/cradle/id/run/anything")
    edit(home, (core, ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label"),
                ox.Literal("approved by the board")))
    code, report = verify(home)
    assert code == 1 and report["equal"] is False, report


def test_a_packs_knowledge_is_held_to_the_same_rule(tmp_path: Path) -> None:
    store = OxigraphStore.unguarded(tmp_path / "g")
    try:
        source = KnowledgeSource(
            OLD.value, (), build=lambda: [("<urn:forged:approval>", f"<{CRADLE}approvalStatus>",
                                           f"<{CRADLE}Approved>")])
        with pytest.raises(ProjectionError, match="approvalStatus"):
            stage(store, [source])
    finally:
        store.close()
