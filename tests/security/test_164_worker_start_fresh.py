"""A query worker's first query sees the events journaled while the worker started.

Finding (tenth attack review, part two): the supervisor of ``cradle-kg serve`` gives a new
worker the generation current when it is spawned (with the journal seq it holds); the
worker, once its process is up, read the SQLite journal's mark (``data_version``) and took
it as already looked at. Events journaled between the two — while the fork server started
the process and it opened its graph, milliseconds to seconds on a loaded machine — were
in neither: the worker's first look found the mark unchanged and answered **200 without
them**, and went on doing so until another event moved the mark. A worker is spawned at
start and each time one is replaced, and any client of an open graph replaces one at will
(a runaway query: 503, and a new worker): events journaled meanwhile were then missing
from that worker's answers for as long as the home stayed quiet.

Now a worker starts with no mark: its first look compares the journal's head with the seq
its generation holds, and asks for a newer generation when the journal moved on. Likewise
the compaction's count: read at the worker's start rather than at its spawn, a compaction
published in between was taken as seen (the second test).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.home import Home
from cradle_kg.server.dataset import PrivateStore
from cradle_kg.server.front import FrontConfig, QueryWorker, Start
from cradle_kg.server.worker import Limits
from tests.security.homes import opened_demo_home
from tests.security.test_160_endpoint_fresh_after_error import _asked, _decide, _Supervisor


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return opened_demo_home(tmp_path_factory, "worker-start", embedded=True)


def test_events_journaled_while_a_worker_starts_are_in_its_answers(
        home: Path, private: PrivateStore) -> None:
    config = FrontConfig(limits=Limits(), timeout=60.0, app_socket=str(home / "no-app"),
                         max_body_bytes=1 << 20, follows=True,
                         journal=str(Home(home).journal), threads=1)
    generation, seq = private.published()  # what the supervisor hands the new worker
    start = Start(0, str(generation), seq)
    decision = _decide(home, "starting")  # journaled while the worker's process starts
    supervisor = _Supervisor(private, failing=set())
    worker = QueryWorker(config, start, supervisor, [0.0], [0], [0],  # type: ignore[arg-type]
                         sandboxed=False)
    status, body = _asked(worker, decision)
    assert status == 200, body
    assert b"true" in body, "the worker answered without an event journaled before the query"
    assert supervisor.asked == 1
    _asked(worker, decision)  # nothing new since: no second ask
    assert supervisor.asked == 1


def test_a_worker_started_while_the_compaction_publishes_moves_to_it(
        home: Path, private: PrivateStore) -> None:
    """The same for the compaction's count: read at the worker's start, not its spawn, it
    was taken as seen, and a worker spawned on the generation before the compaction stayed
    there (the compaction's speed-up lost) until the next event."""
    config = FrontConfig(limits=Limits(), timeout=60.0, app_socket=str(home / "no-app"),
                         max_body_bytes=1 << 20, follows=True,
                         journal=str(Home(home).journal), threads=1)
    generation, seq = private.published()  # what the supervisor hands the new worker
    start = Start(0, str(generation), seq)
    published = [0]
    private.compact()  # meanwhile, the compaction publishes
    published[0] += 1
    supervisor = _Supervisor(private, failing=set())
    worker = QueryWorker(config, start, supervisor, [0.0], [0], published,  # type: ignore[arg-type]
                         sandboxed=False)
    assert _asked(worker, "<urn:nothing>")[0] == 200  # no event since: only the count moved
    assert worker.generation == str(private.published()[0]) != str(generation)
