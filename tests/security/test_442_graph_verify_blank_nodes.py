"""``graph verify`` tells blank-node structures apart.

Finding: ``graph verify`` dropped every blank node's label before hashing a quad, so all
blank nodes of a graph compared as one node. A pack's Turtle ontology writes its OWL
restrictions and RDF lists as blank nodes; a store edited so that ``:Invoice``'s
restriction is now on ``:payer`` and ``:Payment``'s on ``:amount`` (the two
``owl:onProperty`` quads swapped between the blank nodes), or with a list's members
reordered, holds the same quads once the labels are dropped, and ``graph verify`` said
*equal* (exit 0) about a knowledge graph that no longer says what the pack says.

Now: the blank nodes of a graph are compared by colour refinement (each blank node
coloured by what it is linked to, the colours refined until they stop splitting; a
Turtle file's ``[]`` and ``()`` structures are trees, which refinement tells apart
exactly), independent of the labels a load gives them: the edited stores are DIFFERENT
(exit 1) naming the knowledge graph, with the quads added and missing; the intact home,
whose scratch projection loads the same Turtle with fresh labels, is still equal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.home import Home
from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli

ONTOLOGY = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix : <https://example.org/bnode#> .
:Invoice rdfs:subClassOf [ a owl:Restriction ; owl:onProperty :amount ;
                           owl:maxCardinality 1 ] .
:Payment rdfs:subClassOf [ a owl:Restriction ; owl:onProperty :payer ;
                           owl:minCardinality 1 ] .
:Party owl:equivalentClass [ a owl:Class ; owl:unionOf ( :Person :Company :Agency ) ] .
"""
GRAPH = "https://w3id.org/cradle/pack/test.bnode/1.0.0/ontology"
OWL = "http://www.w3.org/2002/07/owl#"
FIRST = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#first")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose one pack ships an ontology of restrictions and a list, its graph
    store rebuilt (the ontology installed as a knowledge graph)."""
    monkeypatch.delenv(GRAPH_URL_ENV, raising=False)
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    root = tmp_path / "home"
    prepare_home(root)
    pack = root / "packs" / "test.bnode"
    pack.mkdir(parents=True)
    (pack / "manifest.yaml").write_text(
        "id: test.bnode\nname: Blank nodes\nversion: 1.0.0\ncore_ontology: \">=0.1.0\"\n"
        "description: an ontology of restrictions and a list\nontology: onto.ttl\n")
    (pack / "onto.ttl").write_text(ONTOLOGY)
    config = json.loads(Home(root).config.read_text())
    Home(root).config.write_text(json.dumps({**config, "packs": ["test.bnode"]}))
    Runtime(root).close()  # the journal
    done = run_cli("graph", "rebuild", "--home", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def swap_objects(store: ox.Store, one: ox.Quad, other: ox.Quad) -> None:
    for quad in (one, other):
        store.remove(quad)
    store.add(ox.Quad(one.subject, one.predicate, other.object, one.graph_name))
    store.add(ox.Quad(other.subject, other.predicate, one.object, other.graph_name))


def swap_restrictions(store: ox.Store) -> None:
    """``:Invoice``'s restriction on ``:payer``, ``:Payment``'s on ``:amount``."""
    one, other = store.quads_for_pattern(None, ox.NamedNode(OWL + "onProperty"), None,
                                         ox.NamedNode(GRAPH))
    swap_objects(store, one, other)


def reorder_the_list(store: ox.Store) -> None:
    """``( :Company :Person :Agency )``: two members of the union swapped."""
    members = {str(q.object): q for q in store.quads_for_pattern(None, FIRST, None,
                                                                 ox.NamedNode(GRAPH))}
    swap_objects(store, members["<https://example.org/bnode#Person>"],
                 members["<https://example.org/bnode#Company>"])


def verify(home: Path) -> tuple[int, dict[str, object]]:
    done = run_cli("graph", "verify", "--home", str(home), "--format", "json")
    assert "Traceback" not in done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def test_the_intact_ontology_is_equal_whatever_its_blank_node_labels(home: Path) -> None:
    code, report = verify(home)
    assert code == 0 and report["equal"] is True, report
    assert report["graphs"] == 1


@pytest.mark.parametrize("edit", [swap_restrictions, reorder_the_list])
def test_a_rewired_blank_node_structure_is_different(
        home: Path, edit: Callable[[ox.Store], None]) -> None:
    store = ox.Store(str(Home(home).graph))
    edit(store)
    store.flush()
    del store
    code, report = verify(home)
    assert code == 1 and report["equal"] is False, report
    differing = report["differing"]
    assert isinstance(differing, list) and [d["graph"] for d in differing] == [GRAPH]
    assert differing[0]["added"] and differing[0]["missing"]
    assert differing[0]["store_quads"] == differing[0]["expected_quads"]
