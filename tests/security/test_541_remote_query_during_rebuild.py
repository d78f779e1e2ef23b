"""A query of a remote store being rebuilt in place is refused, not answered from it.

Finding: a rebuild of a remote store (``graph rebuild``, or a catch-up of a store written
with another layout) works in place: it marks the store (layout 0, the watermark kept),
drops the projection's graphs, then loads the journal's projection graph by graph, the
retractions last. A reader that does not catch up first — a long-lived client: a
runtime's store, a notebook's, another process's named queries — read the store as it
was meanwhile. On a real ``oxigraph serve`` and on Virtuoso, ``approvals`` answered *no
approval at all* on a store whose journal holds one, with nothing to tell the answer
from a true one (``AssertionError: answered 0 approvals during the rebuild (1 in the
journal)``); the same when the rebuild began while the query ran (``DID NOT RAISE``).

Now the remote store's client reads the layout with every query (the union default
graph's listing read it already) and again after the answer: a store marked as being
rebuilt (layout 0, also a rebuild stopped part-way) is a ``GraphStoreError`` naming it,
with the hint to sync (which rebuilds a stopped one); at its own layout the answer is the
same as before. Left open: a whole rebuild begun *and* ended during one query (the
watermark and layout are the same after it) is not seen.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pyoxigraph as ox
import pytest

from cradle_kg.cli.graph import catch_up_home
from cradle_kg.errors import GraphStoreError
from cradle_kg.graph.catchup import rebuild
from cradle_kg.graph.queries import execute
from cradle_kg.packs.hooks import home_projectors
from cradle_kg.records import AuditEvent
from cradle_kg.storage import Journal, open_home_journal
from cradle_kg.storage.graph import rebuilding_mark
from cradle_kg.storage.sparql_http import SparqlHttpStore
from tests import demo_template

from .cut_requests import REMOTE, remote_store

APPROVALS = (Path(__file__).resolve().parents[2] / "queries" / "approvals.rq").read_text()


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("query-during-rebuild") / "home"
    demo_template.demo_home(home, tmp_path_factory)
    return home


def _approvals(store: SparqlHttpStore) -> int:
    found = execute(store, APPROVALS)
    assert isinstance(found, ox.QuerySolutions)
    return len(list(found))


class _ReadMidway:
    """The journal as a rebuild reads it, ``during`` run after its first event: the store
    is marked and its graphs dropped by then, nothing loaded yet."""

    def __init__(self, journal: Journal, during: Any) -> None:
        self._journal, self._during = journal, during

    def head(self) -> tuple[int, str]:
        return self._journal.head()

    def first_hash(self) -> str | None:
        return self._journal.first_hash()

    def events(self, *, since_seq: int = 0) -> Iterator[AuditEvent]:
        for n, ev in enumerate(self._journal.events(since_seq=since_seq)):
            if n == 1:
                self._during()
            yield ev


@pytest.mark.parametrize("engine", sorted(REMOTE))
def test_a_named_query_during_a_rebuild_is_refused(
        engine: str, request: pytest.FixtureRequest, demo_home: Path) -> None:
    server = request.getfixturevalue(REMOTE[engine])
    with open_home_journal(demo_home, must_exist=True) as journal:
        store = remote_store(server)
        catch_up_home(store, journal, demo_home)
        reader = remote_store(server)  # a long-lived reader, another process's
        try:
            whole = _approvals(reader)
            assert whole > 0
            seen: list[object] = []

            def query_now() -> None:
                try:
                    seen.append(_approvals(reader))
                except GraphStoreError as exc:
                    seen.append(exc)

            rebuild(store, cast(Journal, _ReadMidway(journal, query_now)),
                    projectors=home_projectors(demo_home))
            assert len(seen) == 1
            refused = seen[0]
            assert isinstance(refused, GraphStoreError), \
                f"answered {refused} approvals during the rebuild ({whole} in the journal)"
            assert "rebuilt" in refused.message
            assert _approvals(reader) == whole  # after it: answered as before
        finally:
            reader.close()
            store.close()


class _MarkedWhileAsked(SparqlHttpStore):
    """A reader whose query request goes just after another client began a rebuild (the
    layout read before it): marked, the graphs dropped."""

    def __init__(self, server: Any, writer: SparqlHttpStore) -> None:
        super().__init__(remote_store(server).remote)
        self.writer, self.armed = writer, False

    def _select(self, text: str, **kw: Any) -> httpx.Response:
        if self.armed and "GRAPH <https://w3id.org/cradle/meta>" not in text:
            self.armed = False
            drops = [f"DROP SILENT GRAPH <{g}>" for g in self.writer.data_graphs()]
            self.writer._update(" ;\n".join([rebuilding_mark(), *drops]))
        return super()._select(text, **kw)


@pytest.mark.parametrize("engine", sorted(REMOTE))
def test_a_rebuild_begun_during_the_query_is_refused(
        engine: str, request: pytest.FixtureRequest, demo_home: Path) -> None:
    server = request.getfixturevalue(REMOTE[engine])
    with open_home_journal(demo_home, must_exist=True) as journal:
        writer = remote_store(server)
        catch_up_home(writer, journal, demo_home)
        reader = _MarkedWhileAsked(server, writer)
        try:
            assert _approvals(reader) > 0
            reader.armed = True
            with pytest.raises(GraphStoreError, match="rebuilt"):
                _approvals(reader)
            catch_up_home(writer, journal, demo_home)  # the stopped rebuild, done again
            assert _approvals(reader) > 0
        finally:
            reader.close()
            writer.close()
