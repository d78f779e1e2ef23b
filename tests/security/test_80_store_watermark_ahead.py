"""A graph store whose watermark is not this journal's is refused, not caught up from.

Finding: the catch-up loop (``graph sync``, ``graph follow``, ``export``, ``validate
--all``, named queries) starts from the store's own watermark, and took whatever the store
said. A store holding *another* journal's projection — a second home configured with the
same ``CRADLE_GRAPH_URL`` (staging beside production), a journal restored from an older
backup with its store kept, or anyone else who writes the meta graph — says a watermark
past this journal's head: ``graph sync`` answered ``synced: 0 new events`` (exit 0),
``graph follow`` ``projected 31/8 …, lag 0 events``, and every event of this journal up
to that number was skipped for good — a gap nothing reported, under another journal's
triples. Below this journal's head the same: a staging journal longer than production's
watermark was caught up from that watermark — its first events skipped for good,
``synced: N new events``. The watermark was read loosely too: ``int()`` took ``"٣"`` (an
Arabic-Indic digit) for 3, and of two watermark values the store answered the first won.

Now the watermark is one value of ASCII digits or a typed error (``graph_bad_response``);
a watermark past the journal's head (read after it) is ``graph_watermark_ahead``, and so
is a store that records another journal — the store's meta graph names the journal it
projects (``cradle:projectedJournal``, the hash of its first event), written before the
first batch (a store written before it is bound to the first journal that catches it up)
and by every rebuild: one ``error:`` line and exit 2 from ``graph sync`` / ``follow
--once`` / ``export``, ``not projected (retrying): …`` from a running ``graph follow``
(which backs off and goes on), nothing written into the store. ``graph rebuild`` still
projects this journal into it again (it is how such a store is taken back).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.errors import GraphResponseError
from cradle_kg.storage.graph import META_GRAPH
from cradle_kg.storage.graph_config import parse_setting, resolve
from cradle_kg.storage.sparql_http import SparqlHttpStore
from cradle_kg.storage.sparql_scratch import ScratchOxigraph
from tests.conftest import proposal

from ..followers import follow_a_while
from ..inprocess import run_cli
from .sparql_target import serving

#: two homes, each its own journal (the suite's PostgreSQL backend gives every home of a
#: test the one journal it starts: there they would share it); the store is what is tested
pytestmark = pytest.mark.sqlite_only("two homes with journals of their own")


def _home(path: Path, proposals: int, task: str) -> int:
    prepare_home(path)
    with Runtime(path, graph_sync=False) as rt:
        for i in range(proposals):
            rt.submit(proposal(f"{task}-{i}", "demo.ledger.credit",
                               {"account": "a", "amount": 3}, task_id=task))
        return rt.journal.head()[0]


def _cli(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``cradle-kg ARGS --home HOME`` on the store at ``url``, in this process (its exit
    code and its one line are the point, not the process)."""
    return run_cli(*args, "--home", str(home), env={"CRADLE_GRAPH_URL": url})


def _watermark(url: str) -> int:
    store = SparqlHttpStore(resolve(parse_setting(url)))
    try:
        return store.projected_seq()
    finally:
        store.close()


def _runs(url: str) -> list[str]:
    store = SparqlHttpStore(resolve(parse_setting(url)))
    try:
        return store.run_graphs()
    finally:
        store.close()


@pytest.fixture
def shared(oxigraph_server: ScratchOxigraph, tmp_path: Path) -> tuple[str, Path, int]:
    """A real store holding production's projection, and a staging home pointed at it."""
    oxigraph_server.clear()
    url = oxigraph_server.setting()
    prod = _home(tmp_path / "prod", 8, "prod")
    staging_head = _home(tmp_path / "staging", 2, "staging")
    done = _cli(tmp_path / "prod", url, "graph", "sync")
    assert done.returncode == 0, done.stderr
    assert _watermark(url) == prod > staging_head
    return url, tmp_path / "staging", staging_head


def _one_error_line(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr, done.stderr
    assert "error: the graph store says it holds the journal's projection up to event" \
        in done.stderr, done.stderr


def test_sync_and_follow_refuse_another_journal_s_store(
        shared: tuple[str, Path, int]) -> None:
    url, staging, head = shared
    before = _watermark(url)
    for args in (("graph", "sync"), ("graph", "follow", "--once"),
                 ("export", "--format", "nquads")):
        _one_error_line(_cli(staging, url, *args))
    # nothing written: production's projection and watermark are as they were
    assert _watermark(url) == before
    assert not [g for g in _runs(url) if "staging" in g]
    # the way back: a rebuild projects this journal, from its first event
    done = _cli(staging, url, "graph", "rebuild")
    assert done.returncode == 0, done.stderr
    assert _watermark(url) == head
    assert [g for g in _runs(url) if "staging" in g]


def test_a_longer_journal_is_not_caught_up_from_another_s_watermark(
        oxigraph_server: ScratchOxigraph, tmp_path: Path) -> None:
    """The other journal's watermark *behind* this one's head: it was caught up from
    there, the events before it skipped for good (``synced: N new events``, exit 0)."""
    oxigraph_server.clear()
    url = oxigraph_server.setting()
    prod = _home(tmp_path / "prod", 2, "prod")
    staging = tmp_path / "staging"
    staging_head = _home(staging, 8, "staging")
    assert _cli(tmp_path / "prod", url, "graph", "sync").returncode == 0
    assert _watermark(url) == prod < staging_head
    for args in (("graph", "sync"), ("graph", "follow", "--once")):
        done = _cli(staging, url, *args)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "error: the graph store holds the projection of another journal" \
            in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert _watermark(url) == prod
    assert not [g for g in _runs(url) if "staging" in g]
    # production goes on as before; a rebuild gives the store to staging, and then
    # production is the one refused
    assert _cli(tmp_path / "prod", url, "graph", "sync").returncode == 0
    assert _cli(staging, url, "graph", "rebuild").returncode == 0
    assert _watermark(url) == staging_head
    assert _cli(staging, url, "graph", "sync").returncode == 0
    done = _cli(tmp_path / "prod", url, "graph", "sync")
    assert done.returncode == 2 and "another journal" in done.stderr, done.stderr


def test_a_running_follower_says_it_and_goes_on(shared: tuple[str, Path, int]) -> None:
    url, staging, _ = shared
    before = _watermark(url)
    # stopped 5 s after its first line (tests/followers.py)
    code, out, err = follow_a_while(
        ["--home", str(staging), "--interval", "0.05", "--format", "json"],
        {**os.environ, "CRADLE_GRAPH_URL": url}, after=5)
    assert code == 0, err
    lines = [json.loads(line) for line in out.decode().splitlines()]
    assert lines and all(line["error"] and "up to event" in line["error"] for line in lines)
    assert all(line["added"] == 0 for line in lines)
    assert 1 < len(lines) < 40, len(lines)  # retried, backing off
    assert b"Traceback" not in err
    assert _watermark(url) == before


_INT = "http://www.w3.org/2001/XMLSchema#integer"


def _meta_store(values: list[dict[str, Any]]) -> Iterator[str]:
    class Meta(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps({"head": {"vars": ["v"]},
                               "results": {"bindings": [{"v": v} for v in values]}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    with serving(Meta) as url:
        yield url


@pytest.mark.parametrize("values", [
    [{"type": "literal", "value": "\u0663", "datatype": _INT}],  # read as 3
    [{"type": "literal", "value": "2", "datatype": _INT},
     {"type": "literal", "value": "999999", "datatype": _INT}],  # the first won
    [{"type": "literal", "value": "-5", "datatype": _INT}],
    [{"type": "uri", "value": META_GRAPH}],  # was taken for no watermark: 0
], ids=["unicode-digit", "two-values", "negative", "an-iri"])
def test_the_watermark_is_read_strictly(values: list[dict[str, Any]]) -> None:
    for url in _meta_store(values):
        store = SparqlHttpStore(resolve(parse_setting(url)))
        try:
            with pytest.raises(GraphResponseError, match="watermark"):
                store.projected_seq()
        finally:
            store.close()
