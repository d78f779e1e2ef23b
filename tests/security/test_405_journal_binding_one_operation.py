"""The journal a remote store projects is rebound in one operation.

Finding: ``bind_journal`` (run by every rebuild, and by the first catch-up of a store that
names no journal) replaced the store's ``cradle:projectedJournal`` with a ``DELETE WHERE``
then an ``INSERT DATA``. Virtuoso applies a request's operations one by one: a request
stopped between the two left the store naming **no** journal — and a store that names
none is bound to the first journal that catches it up, so another home's journal (a
second home configured with the same store, test_80) was projected over this journal's
triples from this journal's watermark, every event before it skipped for good. On
Virtuoso, cut after its first operation: ``assert None == 'sha256:…'``.

Now the identity is replaced by ONE ``DELETE { … } INSERT { … } WHERE { … }`` operation
(:func:`cradle_kg.storage.graph.meta_replace`, on both stores): a cut request leaves the
old identity or the new one. ``oxigraph serve`` applies a request in one transaction: a
cut request changes nothing there, before and after.
"""

from __future__ import annotations

import pytest

from cradle_kg.errors import GraphStoreError

from .cut_requests import REMOTE, CutStore, operations, remote_store

FIRST = "sha256:" + "1" * 64
AGAIN = "sha256:" + "2" * 64


@pytest.mark.parametrize("engine", sorted(REMOTE))
def test_a_rebinding_cut_after_any_operation_names_a_journal(
        engine: str, request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue(REMOTE[engine])
    remote_store(server).bind_journal(FIRST)
    whole = CutStore(server)
    whole.bind_journal(FIRST)
    whole.close()
    count = len(operations(whole.sent[-1]))
    for keep in range(count):
        cut = CutStore(server, cut=1, keep=keep)
        with pytest.raises(GraphStoreError):
            cut.bind_journal(AGAIN)
        cut.close()
        reader = remote_store(server)
        try:
            assert reader.journal_identity() == FIRST, f"cut after {keep} of {count}"
        finally:
            reader.close()
    store = remote_store(server)
    try:
        store.bind_journal(AGAIN)
        assert remote_store(server).journal_identity() == AGAIN
    finally:
        store.close()
