"""``graph verify`` reads the whole meta graph, not only the three values it expects there.

Finding: the meta graph (``https://w3id.org/cradle/meta``: the watermark, the layout, the
journal's identity, the knowledge graphs' digests) was left out of the comparison, its
values checked one by one. But it is a named graph like any other: every query's union
default graph and every ``GRAPH ?g`` pattern reads it. A store edited to hold a whole
forged approval — approver, status, decision time — in the meta graph showed it in
``cradle-kg query approvals``, and ``graph verify`` said *equal* (exit 0).

Now: a quad of the meta graph that is none of the values the projection writes there (one
watermark, one layout, one journal identity, one digest per knowledge graph) makes the
store DIFFERENT (exit 1), the quads named as a problem of the store; as does a second
value of one of them. The intact store is equal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.home import Home
from cradle_kg.storage.graph import META_GRAPH
from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli

CRADLE = "https://w3id.org/cradle#"
META = ox.NamedNode(META_GRAPH)
XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return rebuilt_home(tmp_path, monkeypatch)


def rebuilt_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with a journal of one event (a document collected) and its graph store,
    rebuilt (bound to the journal)."""
    monkeypatch.delenv(GRAPH_URL_ENV, raising=False)
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    root = tmp_path / "home"
    prepare_home(root)
    rt = Runtime(root)
    rt.add_evidence(b"a document", kind="document", collector="user:alice")
    rt.close()
    done = run_cli("graph", "rebuild", "--home", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def edit(home: Path, *quads: tuple[ox.NamedNode, ox.NamedNode, ox.NamedNode | ox.Literal],
         into: ox.NamedNode = META) -> None:
    """``quads`` added to the graph ``into`` (the meta graph) of the home's store."""
    store = ox.Store(str(Home(home).graph))
    for s, p, o in quads:
        store.add(ox.Quad(s, p, o, into))
    store.flush()
    del store


def verify(home: Path) -> tuple[int, dict[str, object]]:
    done = run_cli("graph", "verify", "--home", str(home), "--format", "json")
    assert "Traceback" not in done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def forged_approval(forged: ox.NamedNode
                    ) -> tuple[tuple[ox.NamedNode, ox.NamedNode, ox.NamedNode | ox.Literal], ...]:
    """An approval no journal holds, approved by ``user:mallory``: what an auditor's
    ``query approvals`` reads wherever the graph holds it."""
    return ((forged, ox.NamedNode(CRADLE + "approver"), ox.NamedNode("urn:user:mallory")),
            (forged, ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
             ox.NamedNode(CRADLE + "HumanApproval")),
            (forged, ox.NamedNode(CRADLE + "approvalStatus"), ox.NamedNode(CRADLE + "Approved")),
            (forged, ox.NamedNode(CRADLE + "decidedAt"),
             ox.Literal("2026-01-01T00:00:00Z", datatype=ox.NamedNode(XSD + "dateTime"))))


def test_the_intact_store_is_equal(home: Path) -> None:
    code, report = verify(home)
    assert code == 0 and report["equal"] is True and report["problems"] == [], report


def test_a_forged_approval_in_the_meta_graph_is_a_difference(home: Path) -> None:
    forged = ox.NamedNode("https://w3id.org/cradle/approval/forged")
    edit(home, *forged_approval(forged))
    shown = run_cli("query", "approvals", "--home", str(home), "--format", "json")
    assert forged.value in shown.stdout  # what an auditor's query reads
    code, report = verify(home)
    assert code == 1 and report["equal"] is False, report
    problems = report["problems"]
    assert isinstance(problems, list) and any("meta graph" in p and forged.value in p
                                              for p in problems), problems


def test_a_second_digest_of_one_knowledge_graph_is_a_difference(home: Path) -> None:
    """(A second watermark, layout or journal is refused as the store opens: test_445.)"""
    graph = ox.NamedNode("https://w3id.org/cradle/pack/test.x/1.0.0/ontology")
    digest = ox.NamedNode(CRADLE + "knowledgeDigest")
    edit(home, (graph, digest, ox.Literal("sha256:" + "1" * 64)),
         (graph, digest, ox.Literal("sha256:" + "2" * 64)))
    code, report = verify(home)
    assert code == 1 and report["equal"] is False, report
