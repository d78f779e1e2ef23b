"""A process that has just applied batches to the embedded store, as the projector does
(``OxigraphStore.apply``: one ``Store.update`` per batch), can still fork: the forked
child runs to its end. An earlier write path (``Store.extend``, ``bulk_extend`` past
10,000 quads) left forked children (validate's pool, a multiprocessing test) hung on a
futex; a hang here fails the test at its timeout instead of blocking the suite."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg.storage.graph import QuadBatch
from cradle_kg.storage.oxigraph import OxigraphStore

CHILD_TIMEOUT = 60.0  # a child does ~10 ms of work: only a hang reaches this


def batch(n: int, size: int) -> QuadBatch:
    ops = QuadBatch()
    graph = f"<https://w3id.org/cradle/run/fork-{n}>"
    ops.add(graph, [f'<urn:s:{n}:{i}> <urn:p:{i % 7}> "value {i} of batch {n}"'
                    for i in range(size)])
    ops.remove(graph, [f"<urn:s:{n - 1}:0> <urn:p:0> <urn:gone>"])
    return ops


def child(folder: str) -> None:
    """What a forked worker does with pyoxigraph: open an on-disk store read-only and query
    it (validate's workers; RocksDB's environment and thread pools are inherited
    mid-flight), and parse, write and query a store in memory. (Not a read-write open on
    disk: a child forked while its parent holds any on-disk store open hangs there,
    whatever the parent wrote and how — RocksDB's process-wide state.)"""
    counts = []
    found = ox.Store.read_only(folder).query("SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }")
    assert isinstance(found, ox.QuerySolutions)
    counts.append(int(next(iter(found))["n"].value))
    mine = ox.Store()
    mine.extend(ox.parse('<urn:a> <urn:b> "c" <urn:g> .\n', format=ox.RdfFormat.N_QUADS))
    mine.update('INSERT DATA { GRAPH <urn:g> { <urn:a> <urn:b> "d" } }')
    counts.append(len(mine))
    raise SystemExit(0 if counts == [1, 2] else 3)


@pytest.mark.slow
def test_a_child_forked_after_follower_style_applies_finishes(tmp_path: Path) -> None:
    path, quiet = tmp_path / "graph", tmp_path / "quiet"
    other = ox.Store(str(quiet))  # a store the children read: written, then closed
    other.update('INSERT DATA { GRAPH <urn:g> { <urn:a> <urn:b> "c" } }')
    other.flush()
    del other
    store = OxigraphStore(path)
    ctx = multiprocessing.get_context("fork")
    try:
        for n in range(1, 7):
            # batches big enough that RocksDB flushes and compacts in its own threads
            store.apply(batch(n, 4000 * n), n)
            proc = ctx.Process(target=child, args=(str(quiet),))
            proc.start()  # at once, while the parent's store threads may be busy
            proc.join(CHILD_TIMEOUT)
            hung = proc.is_alive()
            if hung:
                proc.kill()
                proc.join(10)
            assert not hung, f"the child forked after batch {n} hung"
            assert proc.exitcode == 0, f"the child forked after batch {n} failed"
        assert store.projected_seq() == 6
    finally:
        store.close()
