"""A rebuild stopped part-way leaves a store that is rebuilt again, never one that says it
is current over graphs it dropped.

Finding: a rebuild (``graph rebuild``, and every catch-up of a store written with an older
layout) began with ONE request: ``DROP SILENT GRAPH`` of each of the projection's graphs,
*then* the watermark set to 0. Virtuoso applies a request's operations one by one: a
request stopped after some of the drops (an operation failing at run time: a deadlock
with the projector still writing, a server stopping) left the old watermark and this
layout over a store missing those graphs — and the next catch-up resumed from that
watermark: the dropped graphs' triples were gone for good, with the store saying it held
the journal's projection up to its head. The embedded store did the same in place
(each graph removed in a transaction of its own, the meta graph last). On Virtuoso, cut
after the first drop: ``AssertionError: cut after 1 of …`` (the next catch-up's store is
not the journal's projection); embedded, stopped after its first graph removed: the same.

Now a rebuild first marks the store as being rebuilt — the layout set to 0 in one
operation, before anything is dropped (:func:`cradle_kg.storage.graph.rebuilding_mark`):
stopped anywhere before its last write, the store reads as written with another layout,
and the next catch-up rebuilds it whole — the CLI's too (``catch_up_home``: ``query``,
``export``, ``validate`` skipped a store at the head whatever its layout: ``(33, 0) ==
(33, 4)``), and a long-lived client lists the graphs again (it kept its list for the
watermark alone, which the rebuild no longer moves: ``719 == 834`` quads in its union).
``oxigraph serve`` applies a request in one transaction: a cut request changes nothing
there, before and after.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from cradle_kg.cli.graph import catch_up_home
from cradle_kg.errors import GraphStoreError
from cradle_kg.graph.catchup import catch_up, rebuild
from cradle_kg.packs.hooks import home_projectors
from cradle_kg.storage import open_home_journal
from cradle_kg.storage.graph import PROJECTION_VERSION, GraphStore
from cradle_kg.storage.oxigraph import OxigraphStore
from tests import demo_template

from .cut_requests import REMOTE, CutStore, operations, remote_store


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("rebuild-cut") / "home"
    demo_template.demo_home(home, tmp_path_factory)
    return home


def _reference(home: Path) -> str:
    reference = OxigraphStore.in_memory()
    with open_home_journal(home, must_exist=True) as journal:
        rebuild(reference, journal, projectors=home_projectors(home))
    return reference.nquads()


@pytest.mark.parametrize("engine", sorted(REMOTE))
def test_a_remote_rebuild_cut_after_any_drop_is_rebuilt_again(
        engine: str, request: pytest.FixtureRequest, demo_home: Path) -> None:
    """The next reader after the cut: the CLI's catch-up (``query``, ``export``,
    ``validate``: :func:`catch_up_home`), which skipped a store at the head before."""
    server = request.getfixturevalue(REMOTE[engine])
    expected = _reference(demo_home)
    projectors = home_projectors(demo_home)
    with open_home_journal(demo_home, must_exist=True) as journal:
        head = journal.head()[0]
        store = remote_store(server)
        catch_up_home(store, journal, demo_home)
        store.close()
        whole = CutStore(server)
        rebuild(whole, journal, projectors=projectors)
        whole.close()
        count = len(operations(whole.sent[0]))
        assert count > 3  # the projection's graphs, dropped
        for keep in (1, count // 2, count - 1):
            cut = CutStore(server, cut=1, keep=keep)
            with pytest.raises(GraphStoreError):
                rebuild(cut, journal, projectors=projectors)
            cut.close()
            reader = remote_store(server)  # a long-lived reader lists the graphs left
            reader._dataset_names()  # (a query of them is refused meanwhile: test_541)
            store = remote_store(server)  # the next reader (another process)
            try:
                catch_up_home(store, journal, demo_home)
                assert (store.projected_seq(), store.layout()) == (head, PROJECTION_VERSION)
                assert store.nquads() == expected, f"cut after {keep} of {count}"
                # the watermark is the same as before the rebuild: the long-lived reader
                # lists the graphs again all the same (its list is the layout's too)
                assert _union_count(reader) == _union_count(store)
            finally:
                store.close()
                reader.close()


def _union_count(store: GraphStore) -> int:
    found = store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert isinstance(found, ox.QuerySolutions)
    (row,) = list(found)
    return int(row["n"].value)  # type: ignore[union-attr]


class _StopsRemoving:
    """A pyoxigraph store whose second ``remove_graph`` fails (a kill part-way)."""

    def __init__(self, real: ox.Store) -> None:
        self._real, self._removed = real, 0

    def remove_graph(self, graph: Any) -> None:
        self._removed += 1
        if self._removed == 2:
            raise OSError("stopped")
        self._real.remove_graph(graph)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_an_embedded_rebuild_stopped_after_a_graph_is_rebuilt_again(
        demo_home: Path, tmp_path: Path) -> None:
    expected = _reference(demo_home)
    store = OxigraphStore(tmp_path / "graph")
    try:
        with open_home_journal(demo_home, must_exist=True) as journal:
            head = journal.head()[0]
            catch_up(store, journal)
            real = store.store
            store.store = _StopsRemoving(real)  # type: ignore[assignment]
            with pytest.raises(OSError, match="stopped"):
                rebuild(store, journal)
            store.store = real
            store._meta = None
            catch_up(store, journal)
        assert (store.projected_seq(), store.layout()) == (head, PROJECTION_VERSION)
        assert store.nquads() == expected
    finally:
        store.close()
