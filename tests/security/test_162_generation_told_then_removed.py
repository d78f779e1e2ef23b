"""A generation the supervisor tells a worker to open is never removed before it is recorded.

Finding (tenth attack review, part two): the supervisor of ``cradle-kg serve`` answers
each worker's ask for the newest generation on a thread of that worker's own: it catches
its private store up, reads the current generation, writes down that the slot holds it,
answers, and removes the generations no slot holds (``_retire``). Reading the current
generation and writing it down were two steps with nothing between them and another
slot's removal: a second worker that asked meanwhile (a new event; every worker asks at
once when a compaction is published) published the next generation and removed the first
worker's — told to it a moment later. That worker then failed to open it on every query
(500 "the query worker failed: … No such file or directory"), and kept it as its newest:
with no new event, its share of the server's connections failed for as long as the home
stayed quiet. A worker being started read the current generation the same way, ahead of
its slot's record.

Now reading a generation for a worker, recording it for the worker's slot, and removing
the generations no slot holds happen under one lock: a generation is removed only when no
worker was told it. And on the worker's side, a query thread whose looked-at generation
was removed since (another thread was told a newer one) runs on the worker's newest (the
second test). The pause here stands for the answering thread being descheduled
right after it read the current generation.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.home import Home
from cradle_kg.server.dataset import PrivateStore
from cradle_kg.server.front import FrontConfig
from cradle_kg.server.supervisor import QueryFront, _Slot
from cradle_kg.server.worker import Limits
from tests.security.homes import opened_demo_home


class _Pipe:
    """A worker's end as the supervisor's thread sees it: one ``latest``, then closed."""

    def __init__(self) -> None:
        self.asked = False
        self.told: list[tuple[Any, ...]] = []

    def recv(self) -> tuple[Any, ...]:
        if self.asked:
            raise EOFError
        self.asked = True
        return ("latest",)

    def send(self, message: tuple[Any, ...]) -> None:
        self.told.append(message)


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return opened_demo_home(tmp_path_factory, "told-then-removed", embedded=True)


def _event(home: Path, name: str) -> None:
    with Runtime(home, graph_sync=False) as rt:
        out = rt.submit({"id": f"p-{name}", "task_id": f"task-{name}", "agent_id": AGENT,
                         "action": {"action_type": "demo.ledger.credit",
                                    "target": f"ledger:acct-{name}",
                                    "arguments": {"account": f"acct-{name}", "amount": 3}}})
    assert out.decision is not None


def test_a_generation_told_to_a_worker_is_not_removed_meanwhile(
        home: Path, private: PrivateStore, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = FrontConfig(limits=Limits(), timeout=60.0, app_socket=str(tmp_path / "app"),
                         max_body_bytes=1 << 20, follows=True)
    front = QueryFront(private, config, sock, workdir=tmp_path / "work", size=2)
    first = str(private.published()[0])
    slow, quick = _Pipe(), _Pipe()
    slots = [_Slot(None, slow, None, first), _Slot(None, quick, None, first)]  # type: ignore[arg-type]
    front._slots = list(slots)  # type: ignore[arg-type]

    read = private.published
    paused, go_on = threading.Event(), threading.Event()

    def published() -> tuple[Path, int]:
        got = read()
        if threading.current_thread().name == "slow-slot":
            paused.set()  # descheduled right after reading the current generation
            assert go_on.wait(20)
        return got

    monkeypatch.setattr(private, "published", published)
    _event(home, "one")  # the slow slot's ask catches this one up
    slow_thread = threading.Thread(target=front._serve, args=(slots[0],), name="slow-slot")
    slow_thread.start()
    assert paused.wait(20)
    _event(home, "two")  # the other slot's ask publishes the next generation, and retires
    quick_thread = threading.Thread(target=front._serve, args=(slots[1],), name="quick-slot")
    quick_thread.start()
    quick_thread.join(1.0)
    go_on.set()
    slow_thread.join(20)
    quick_thread.join(20)
    sock.close()
    assert slow.told and quick.told
    for pipe in (slow, quick):
        told = Path(str(pipe.told[0][0]))
        assert (told / "CURRENT").is_file(), f"{told.name} was removed before it was opened"


def test_a_query_whose_generation_was_removed_runs_on_the_workers_newest(
        home: Path, private: PrivateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's side: a query thread looked (its job naming the generation then
    newest), was descheduled, and another thread of the worker was told a newer one — the
    slot records that one, and the older is removed. The query then opened a generation
    that no longer existed: a 500. It holds no more than the worker's newest, which the
    slot records (never removed): the query runs there."""
    from cradle_kg.server.front import QueryWorker, Start
    from cradle_kg.server.worker import Job
    from tests.security.test_160_endpoint_fresh_after_error import _Supervisor

    config = FrontConfig(limits=Limits(), timeout=60.0, app_socket=str(home / "no-app"),
                         max_body_bytes=1 << 20, follows=True,
                         journal=str(Home(home).journal), threads=1)
    old, seq = private.published()
    worker = QueryWorker(config, Start(0, str(old), seq), _Supervisor(private, set()),  # type: ignore[arg-type]
                         [0.0], [0], [0], sandboxed=False)
    _event(home, "newer")
    ask = Job(query="ASK { ?s ?p ?o }", accept="application/sparql-results+json")
    assert worker.execute(ask, {}, []).status == 200  # another thread: told the newer one
    newest = worker.generation
    assert newest != str(old)
    private.retire({Path(newest)})  # the slot records the newer one: the older is removed
    assert not Path(old).exists()
    monkeypatch.setattr(worker, "_fresh", lambda: str(old))  # this thread's earlier look
    reply = worker.execute(ask, {}, [])
    assert reply.status == 200, reply.body
