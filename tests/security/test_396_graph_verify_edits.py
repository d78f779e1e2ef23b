"""``graph verify``: a graph store edited behind the journal's back is named, graph by graph.

Before, nothing compared the store an auditor queries with the journal: ``audit verify``
(and ``--semantics``) read the journal only, so a quad inserted into a run's graph through
the store's files, one deleted, a literal changed, a pack's knowledge graph edited, all
read as intact. ``cradle-kg graph verify`` projects the journal into a scratch store and
compares them per named graph: 0 equal, 1 different (each differing graph named, with
the quads added and missing), read only. Fails before: there was no such command (exit 2).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg.home import Home
from tests.inprocess import run_cli
from tests.security.homes import embedded_copy, embedded_demo_home

RUN = "https://w3id.org/cradle/run/"
PACK = "https://w3id.org/cradle/pack/"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo with its pilot packs (run graphs, the shared graph, knowledge graphs)."""
    return embedded_demo_home(tmp_path_factory, "verify", pilots=True)


@pytest.fixture
def home(demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return embedded_copy(demo, tmp_path, monkeypatch)


def verify(home: Path, *extra: str) -> tuple[int, str, str]:
    done = run_cli("graph", "verify", "--home", str(home), *extra)
    assert "Traceback" not in done.stdout + done.stderr
    return done.returncode, done.stdout, done.stderr


def graphs(store: ox.Store, prefix: str) -> list[ox.NamedNode]:
    return sorted((g for g in store.named_graphs()
                   if isinstance(g, ox.NamedNode) and g.value.startswith(prefix)),
                  key=lambda g: g.value)


def first(store: ox.Store, graph: ox.NamedNode, literal: bool = False) -> ox.Quad:
    return next(q for q in store.quads_for_pattern(None, None, None, graph)
                if not literal or isinstance(q.object, ox.Literal))


def insert_into_a_run(store: ox.Store) -> list[str]:
    run = graphs(store, RUN)[0]
    store.add(ox.Quad(ox.NamedNode("urn:forged"), ox.NamedNode("https://w3id.org/cradle#"
                      "approvedBy"), ox.NamedNode("urn:nobody"), run))
    return [run.value]


def delete_from_a_run(store: ox.Store) -> list[str]:
    run = graphs(store, RUN)[1]
    store.remove(first(store, run))
    return [run.value]


def change_a_literal(store: ox.Store) -> list[str]:
    run = graphs(store, RUN)[2]
    quad = first(store, run, literal=True)
    store.remove(quad)
    store.add(ox.Quad(quad.subject, quad.predicate, ox.Literal("edited"), run))
    return [run.value]


def two_runs(store: ox.Store) -> list[str]:
    return insert_into_a_run(store) + change_a_literal(store)


def edit_knowledge(store: ox.Store) -> list[str]:
    pack = next(g for g in graphs(store, PACK) if g.value.endswith("/hs2022"))
    quad = first(store, pack, literal=True)
    store.remove(quad)
    store.add(ox.Quad(quad.subject, quad.predicate, ox.Literal("not what the pack says"),
                      pack))
    return [pack.value]


def merge_two_nodes(store: ox.Store) -> list[str]:
    """What a projection that keys two objects alike writes (``test_386``'s proposals): a
    store projected by it, compared with the projection of today's code."""
    run = graphs(store, RUN)[3]
    kind = ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    typed: dict[str, list[ox.NamedNode | ox.BlankNode]] = {}
    for quad in store.quads_for_pattern(None, kind, None, run):
        typed.setdefault(str(quad.object), []).append(quad.subject)  # type: ignore[arg-type]
    one, other = next(nodes for nodes in typed.values() if len(nodes) > 1)[:2]
    for quad in list(store.quads_for_pattern(other, None, None, run)):
        store.remove(quad)
        store.add(ox.Quad(one, quad.predicate, quad.object, run))
    return [run.value]


def into_the_shared_graph(store: ox.Store) -> list[str]:
    shared = ox.NamedNode("https://w3id.org/cradle/graph/shared")
    store.add(ox.Quad(ox.NamedNode("urn:forged-policy"), ox.NamedNode("urn:p"),
                      ox.Literal("x"), shared))
    return [shared.value]


def checksums(home: Path) -> dict[str, str]:
    """Every file of the home but the lock's holder pid and the empty ``-wal``/``-shm`` a
    read-only SQLite reader makes beside a WAL journal (README, test_302)."""
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file() and p.name != "graph.lock"
            and not p.name.endswith(("-wal", "-shm"))}


def test_an_intact_home_is_equal_and_left_as_it_was(home: Path) -> None:
    before = checksums(home)
    code, out, err = verify(home)
    assert code == 0, out + err
    assert out.startswith("equal: ") and "DIFFERENT" not in out
    code, out, _ = verify(home, "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["equal"] is True and report["differing"] == []
    assert report["graphs"] >= 10 and report["events"] == report["head"] > 0
    assert checksums(home) == before  # the journal, the store's files, the evidence


#: the edits, each on graphs of its own (``two_runs`` is the case of two graphs at once), so
#: that one store carries them all and one ``graph verify`` (a projection of the whole
#: journal, ~4 s) answers for every one: the graphs it names must be exactly the edited
#: ones — an edit it missed leaves its graph out, one it made up adds a graph
EDITS = [insert_into_a_run, delete_from_a_run, change_a_literal, two_runs, edit_knowledge,
         merge_two_nodes, into_the_shared_graph]
ALONE = [insert_into_a_run, delete_from_a_run, change_a_literal, edit_knowledge,
         merge_two_nodes, into_the_shared_graph]


@pytest.fixture(scope="module")
def edited(demo: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[dict[str, list[str]], int, dict[str, dict[str, list[str]]]]:
    """Every edit of :data:`ALONE` made in one copy of the demo, then one ``graph verify``:
    (the graphs each edit touched, its exit code, its report's differences by graph)."""
    with pytest.MonkeyPatch.context() as env:
        home = embedded_copy(demo, tmp_path_factory.mktemp("edited"), env)
        store = ox.Store(str(Home(home).graph))
        touched = {edit.__name__: edit(store) for edit in ALONE}
        store.flush()
        del store
        code, out, err = verify(home, "--format", "json")  # the text: test_the_quads_added…
    report = json.loads(out)
    assert report["equal"] is False, out + err
    touched["two_runs"] = touched["insert_into_a_run"] + touched["change_a_literal"]
    graphs_touched = [g for edit in ALONE for g in touched[edit.__name__]]
    assert len(set(graphs_touched)) == len(graphs_touched)  # each edit on graphs of its own
    return touched, code, {d["graph"]: d for d in report["differing"]}


def test_the_edited_graphs_and_only_they_are_named(
        edited: tuple[dict[str, list[str]], int, dict[str, dict[str, list[str]]]]) -> None:
    touched, code, differing = edited
    assert code == 1
    assert sorted(differing) == sorted(g for edit in ALONE for g in touched[edit.__name__])


@pytest.mark.parametrize("edit", EDITS)
def test_an_edited_store_is_different_and_each_edited_graph_is_named(
        edited: tuple[dict[str, list[str]], int, dict[str, dict[str, list[str]]]],
        edit: Callable[[ox.Store], list[str]]) -> None:
    touched, code, differing = edited
    assert code == 1
    for graph in touched[edit.__name__]:
        diff = differing[graph]
        assert diff["added"] or diff["missing"]


def test_the_quads_added_and_missing_are_shown(home: Path) -> None:
    store = ox.Store(str(Home(home).graph))
    run = graphs(store, RUN)[2]
    quad = first(store, run, literal=True)
    change_a_literal(store)
    store.flush()
    del store
    code, out, err = verify(home)
    assert code == 1, out + err
    assert out.startswith("DIFFERENT: 1 of ") and f"graph <{run.value}>" in out
    code, out, _ = verify(home, "--format", "json")
    (diff,) = json.loads(out)["differing"]
    edited = ox.Quad(quad.subject, quad.predicate, ox.Literal("edited"), run)
    assert code == 1 and diff["missing"] == [f"{quad} ."]
    assert diff["added"] == [f"{edited} ."]
    assert diff["store_quads"] == diff["expected_quads"]
