"""The policy set in force is journaled whenever it changes — back and forth too."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg import Runtime
from cradle_kg.graph.catchup import catch_up
from cradle_kg.graph.project import SHARED_GRAPH
from cradle_kg.graph.queries import QueryCatalog, bind, execute
from cradle_kg.storage.graph_opening import open_graph_store
from cradle_kg.storage.oxigraph import OxigraphStore

from .conftest import make_config, proposal


def _activations(home: Path) -> list[str]:
    with Runtime(home, config=make_config()) as rt:
        return [e.payload["version"] for e in rt.journal.events()
                if e.kind == "policyset.activated"]


def test_switching_policies_back_and_forth_is_recorded(home: Path) -> None:
    extra = home / "policies" / "extra.cedar"

    decisions: dict[str, str] = {}

    def submit(pid: str) -> str:
        with Runtime(home, config=make_config()) as rt:
            out = rt.submit(proposal(pid, "demo.ledger.credit", {"account": "a", "amount": 1}))
            assert out.decision is not None
            decisions[pid] = out.decision.id
            return out.decision.policy_version

    a = submit("p1")
    extra.write_text('@id("extra")\npermit(principal, action == Action::"nothing", resource);\n')
    b = submit("p2")
    extra.unlink()
    a_again = submit("p3")
    assert a == a_again != b
    assert _activations(home) == [a, b, a]
    assert submit("p4") == a
    assert _activations(home) == [a, b, a]  # unchanged policies: no new activation
    in_force = _in_force(home, decisions)
    # the version switched back to is in force again (not the one activated in between)
    assert in_force == {"p1": (a, True), "p2": (b, True), "p3": (a, True), "p4": (a, True)}


def _in_force(home: Path, decisions: dict[str, str]) -> dict[str, tuple[str, bool]]:
    with Runtime(home, config=make_config()) as rt:
        rt.sync_graph()
    store = open_graph_store(home)  # whichever store the home uses
    try:
        q = QueryCatalog.load().get("policy-in-force")
        out = {}
        for pid, decision in decisions.items():
            rows = list(execute(store, q.text, bound=bind(q, {"decision": decision})))
            assert len(rows) == 1
            out[pid] = (rows[0]["inForceVersion"].value, rows[0]["matches"].value == "true")
        # the policy nodes are described once, in the shared graph, never in a run graph
        typed = store.query("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?p a "
                            "<https://w3id.org/cradle#Policy> } }")
        assert isinstance(typed, ox.QuerySolutions)
        assert {row[0].value for row in typed} == {SHARED_GRAPH}  # type: ignore[union-attr]
        return out
    finally:
        store.close()


@pytest.mark.embedded_graph_only("edits the embedded store's quads in place")
def test_a_store_of_the_old_layout_is_rebuilt_on_its_next_sync(home: Path) -> None:
    """A store written before the shared graph (policies copied into run graphs, no layout
    recorded) is projected again by its next sync: same quads as a fresh projection."""
    from cradle_kg.graph.project import project_nquads
    from cradle_kg.storage.graph import META_GRAPH, PROJECTION_VERSION
    from cradle_kg.storage.opening import open_home_journal

    with Runtime(home, config=make_config()) as rt:
        rt.submit(proposal("p1", "demo.ledger.credit", {"account": "a", "amount": 1}))
        rt.sync_graph()
    store = OxigraphStore(home / "graph")
    try:
        assert store.layout() == PROJECTION_VERSION
        meta = ox.NamedNode(META_GRAPH)
        version = ox.NamedNode("https://w3id.org/cradle#projectionVersion")
        for quad in list(store.store.quads_for_pattern(meta, version, None, meta)):
            store.store.remove(quad)
        stale = ox.Quad(ox.NamedNode("https://w3id.org/cradle/id/policy/old"),
                        ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
                        ox.NamedNode("https://w3id.org/cradle#Policy"),
                        ox.NamedNode("https://w3id.org/cradle/run/run%3Aold"))
        store.store.add(stale)
        assert store.layout() == 1
        with open_home_journal(home) as journal:
            catch_up(store, journal)
            expected = project_nquads(journal.events())
        assert store.layout() == PROJECTION_VERSION
        assert store.nquads() == expected
    finally:
        store.close()


def test_another_writer_costs_one_watermark_read_a_call(home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """With other processes writing, every call finds the watermark moved and reads the
    latest activation again; the watermark is read once for it, not again after (on
    PostgreSQL a watermark is a statement: the head), and an unchanged watermark reads
    nothing else."""
    with Runtime(home, config=make_config()) as rt, \
            Runtime(home, config=make_config()) as other:
        rt.submit(proposal("warm", "demo.ledger.credit", {"account": "a", "amount": 1}))
        calls = {"watermark": 0, "last_of_kind": 0}
        journal = rt.journal
        for name in calls:
            real = getattr(journal, name)

            def counted(*a: object, _real: object = real, _name: str = name) -> object:
                calls[_name] += 1
                return _real(*a)  # type: ignore[operator]

            monkeypatch.setattr(journal, name, counted)
        for i in range(3):
            other.submit(proposal(f"o{i}", "demo.ledger.credit", {"account": "b", "amount": 1}))
            rt.submit(proposal(f"p{i}", "demo.ledger.credit", {"account": "a", "amount": 1}))
        assert calls == {"watermark": 3, "last_of_kind": 3}
        for i in range(3):
            rt.submit(proposal(f"q{i}", "demo.ledger.credit", {"account": "a", "amount": 1}))
        assert calls == {"watermark": 6, "last_of_kind": 3}
    assert len(_activations(home)) == 1
