"""``/healthz`` answers while the server's private store catches up with the journal.

Finding (tenth attack review, part two): with the compaction, ``/healthz`` began to say
which generation the workers should be on, read through ``PrivateStore.published()`` —
under the lock the store's catch-up holds while it projects the journal's new events and
publishes a generation. ``/healthz`` is answered on the server process's event loop (the
app shell, before and beside the JSON API), so while a catch-up ran (any client's query
after a burst of events: seconds for a large batch) a health probe held the loop: the
probe, the JSON API, the web page and every approver's decision waited for the catch-up,
and a load balancer whose probe timed out took the server out of service.

Now ``/healthz`` reads the newest generation's name without the catch-up's lock (one
attribute read): it answers at once, a catch-up or not.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.server import dataset
from cradle_kg.server.dataset import PrivateStore
from cradle_kg.server.front import FrontConfig
from cradle_kg.server.supervisor import QueryFront
from cradle_kg.server.worker import Limits
from tests.security.homes import opened_demo_home


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return opened_demo_home(tmp_path_factory, "healthz-catch-up", embedded=True)


def test_healthz_answers_while_a_catch_up_runs(home: Path, private: PrivateStore,
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = FrontConfig(limits=Limits(), timeout=60.0, app_socket=str(tmp_path / "app"),
                         max_body_bytes=1 << 20, follows=True)
    front = QueryFront(private, config, sock, workdir=tmp_path / "work", size=2)
    with Runtime(home, graph_sync=False) as rt:  # a burst of events for the catch-up
        rt.submit({"id": "p-burst", "task_id": "task-burst", "agent_id": AGENT,
                   "action": {"action_type": "demo.ledger.credit",
                              "target": "ledger:acct-burst",
                              "arguments": {"account": "acct-burst", "amount": 3}}})

    real = dataset.catch_up
    projecting, done = threading.Event(), threading.Event()

    def long_catch_up(*args: Any, **kw: Any) -> Any:  # a large batch: seconds
        projecting.set()
        assert done.wait(20)
        return real(*args, **kw)

    monkeypatch.setattr(dataset, "catch_up", long_catch_up)
    catching_up = threading.Thread(target=private.latest)
    catching_up.start()
    assert projecting.wait(20)
    answered: list[dict[str, Any]] = []
    probe = threading.Thread(target=lambda: answered.append(front.health()))
    started = time.monotonic()
    probe.start()
    probe.join(2.0)
    waited = time.monotonic() - started
    done.set()
    catching_up.join(20)
    probe.join(20)
    sock.close()
    assert answered, "no health answer"
    assert waited < 2.0, f"/healthz waited {waited:.1f} s for the catch-up"
    assert answered[0]["generation"].startswith("generation-")
