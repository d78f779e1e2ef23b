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


@pytest.mark.parametrize("edit", [insert_into_a_run, delete_from_a_run, change_a_literal,
                                  two_runs, edit_knowledge, merge_two_nodes,
                                  into_the_shared_graph])
def test_an_edited_store_is_different_and_each_edited_graph_is_named(
        home: Path, edit: Callable[[ox.Store], list[str]]) -> None:
    store = ox.Store(str(Home(home).graph))
    edited = edit(store)
    store.flush()
    del store
    code, out, err = verify(home, "--format", "json")  # the text: test_the_quads_added…
    report = json.loads(out)
    assert code == 1 and report["equal"] is False, out + err
    assert sorted(d["graph"] for d in report["differing"]) == sorted(edited)
    for diff in report["differing"]:
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
