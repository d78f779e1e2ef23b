"""A remote store's watermark and layout move in one operation.

Finding: the remote store moved its watermark with three operations at the end of each
batch's request — ``DELETE WHERE`` of the watermark, ``DELETE WHERE`` of the layout,
``INSERT DATA`` of both. Virtuoso applies a request's operations one by one: a request
that stopped between them (an operation failing at run time: a deadlock with another
writer, a server stopping) left the meta graph with **neither watermark nor layout**, for
good. The next catch-up (``graph sync`` / ``follow``, ``serve`` at start) read watermark 0
and projected the whole journal again (minutes on a big store); a store cut between the
two deletes read as layout 1 and was rebuilt from scratch. On Virtuoso, a batch's request
cut after the watermark's first delete: ``AssertionError: cut after 3 of 5 operations``,
``assert (0, 4) == (7, 4)`` — watermark 0 where 7 was recorded.

Now the watermark and the layout are replaced by ONE ``DELETE { … } INSERT { … } WHERE {
OPTIONAL … }`` operation (:func:`cradle_kg.storage.graph.meta_replace`; every variable of
its ``DELETE`` template bound: Virtuoso 7.2 drops a solution with an unbound one whole,
its ``INSERT`` too, so a plain ``OPTIONAL`` wrote no watermark into an empty store): a request cut
anywhere leaves the old watermark and layout or the new ones, never neither. ``oxigraph
serve`` applies a request in one transaction: a cut request changes nothing there, before
and after. A reader polling the meta graph while batches are applied never saw a request
half-applied on either engine (each applies a request in isolation from readers), before
and after: kept as a check.
"""

from __future__ import annotations

import threading

import pytest

from cradle_kg.errors import GraphStoreError
from cradle_kg.storage.graph import META_GRAPH, PROJECTION_VERSION, SEQ, VERSION, QuadBatch

from .cut_requests import REMOTE, CutStore, operations, remote_store

RUN = "<https://w3id.org/cradle/run/a>"


def _batch(n: int) -> QuadBatch:
    out = QuadBatch()
    out.add(RUN, [f'<urn:s{n}> <urn:p> "{k}"' for k in range(3)])
    out.remove(RUN, [f'<urn:s{n - 1}> <urn:p> "0"'])
    return out


@pytest.mark.parametrize("engine", sorted(REMOTE))
def test_an_apply_cut_after_any_operation_leaves_a_watermark_and_a_layout(
        engine: str, request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue(REMOTE[engine])
    reader = remote_store(server)
    try:
        remote_store(server).apply(_batch(7), 7)
        whole = CutStore(server)
        whole.apply(_batch(8), 7)
        whole.close()
        count = len(operations(whole.sent[-1]))
        assert count >= 3
        for keep in range(count):
            cut = CutStore(server, cut=1, keep=keep)
            with pytest.raises(GraphStoreError):
                cut.apply(_batch(8), 8)
            seen = (reader.projected_seq(), reader.layout())
            assert seen == (7, PROJECTION_VERSION), f"cut after {keep} of {count} operations"
    finally:
        reader.close()


@pytest.mark.parametrize("engine", sorted(REMOTE))
def test_a_reader_never_sees_the_meta_graph_without_its_watermark(
        engine: str, request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue(REMOTE[engine])
    writer, reader = remote_store(server), remote_store(server)
    meta = f"<{META_GRAPH}>"
    both = (f"SELECT ?seq ?layout WHERE {{ OPTIONAL {{ GRAPH {meta} {{ {meta} <{SEQ}> ?seq }} }} "
            f"OPTIONAL {{ GRAPH {meta} {{ {meta} <{VERSION}> ?layout }} }} }}")
    seen: list[tuple[str | None, str | None]] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            for row in reader.query(both, union=False):  # type: ignore[union-attr]
                seen.append((row["seq"] and row["seq"].value,
                             row["layout"] and row["layout"].value))

    try:
        writer.apply(_batch(1), 1)
        thread = threading.Thread(target=poll)
        thread.start()
        try:
            for n in range(2, 120):
                writer.apply(_batch(n), n)
        finally:
            done.set()
            thread.join()
        assert len(seen) > 10
        assert all(s is not None and layout == str(PROJECTION_VERSION) for s, layout in seen), \
            [x for x in seen if None in x][:3]
        values = [int(str(s)) for s, _ in seen]
        assert values == sorted(values)  # never moves back
    finally:
        writer.close()
        reader.close()
