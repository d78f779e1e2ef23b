"""A query worker that failed to catch up asks again at its next query.

Finding (tenth attack review, part two): before each query a worker of ``cradle-kg serve``
looks at the home's SQLite journal (``data_version``, a few microseconds) and asks the
supervisor for a newer generation of the graph only when that mark moved since its last
look. It wrote the new mark down *before* asking; when the ask failed — the supervisor's
catch-up raised (the work folder's disk full while a generation was published, the
journal unreadable for a moment, a pack's projection hook failing), or the journal's head
could not be read — the query was answered 500, but the mark was already taken: every
later query saw "nothing new" and was answered **200 from the old generation**, without
the events journaled before it arrived, until another event moved the mark. A decision
the endpoint says does not exist, silently, for as long as the home stays quiet. The same
held when the compaction's count moved: the count was taken before the ask.

Now the mark (and the compaction's count) is kept only once the worker holds a generation
that contains what it saw: a failed look is looked at again by the next query.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.graph.project import node
from cradle_kg.home import Home
from cradle_kg.server.dataset import PrivateStore
from cradle_kg.server.front import FrontConfig, QueryWorker, Start
from cradle_kg.server.worker import Job, Limits
from tests.security.homes import opened_demo_home


class _Supervisor:
    """The supervisor's end of a worker's pipe: answers ``latest`` as ``_serve`` does, and
    fails the asks listed in ``failing`` (1-based) as ``_serve`` does when it raises."""

    def __init__(self, private: PrivateStore, failing: set[int]) -> None:
        self.private = private
        self.failing = failing
        self.asked = 0
        self._answer: tuple[Any, ...] = ()

    def send(self, message: tuple[Any, ...]) -> None:
        assert message == ("latest",)
        self.asked += 1
        if self.asked in self.failing:
            self._answer = ("error", "OSError")
            return
        self.private.latest()
        generation, seq = self.private.published()
        self._answer = (str(generation), seq)

    def recv(self) -> tuple[Any, ...]:
        return self._answer


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return opened_demo_home(tmp_path_factory, "fresh-after-error", embedded=True)


def _worker(home: Path, private: PrivateStore, supervisor: _Supervisor,
            published: list[int]) -> QueryWorker:
    config = FrontConfig(limits=Limits(), timeout=60.0, app_socket=str(home / "no-app"),
                         max_body_bytes=1 << 20, follows=True,
                         journal=str(Home(home).journal), threads=1)
    generation, seq = private.published()
    return QueryWorker(config, Start(0, str(generation), seq), supervisor,  # type: ignore[arg-type]
                       [0.0], [0], published, sandboxed=False)


def _decide(home: Path, name: str) -> str:
    with Runtime(home, graph_sync=False) as rt:
        out = rt.submit({"id": f"p-{name}", "task_id": f"task-{name}", "agent_id": AGENT,
                         "action": {"action_type": "demo.ledger.credit",
                                    "target": f"ledger:acct-{name}",
                                    "arguments": {"account": f"acct-{name}", "amount": 3}}})
    assert out.decision is not None
    return node("decision", out.decision.id)


def _asked(worker: QueryWorker, decision: str) -> tuple[int, bytes]:
    reply = worker.execute(Job(query=f"ASK {{ {decision} ?p ?o }}",
                               accept="application/sparql-results+json"), {}, [])
    return reply.status, reply.body


def test_a_failed_catch_up_is_tried_again_by_the_next_query(home: Path,
                                                            private: PrivateStore) -> None:
    supervisor = _Supervisor(private, failing={1})
    worker = _worker(home, private, supervisor, [0])
    decision = _decide(home, "late")  # journaled before every query below
    status, body = _asked(worker, decision)
    assert status == 500 and b"could not catch up" in body  # the failure is said
    status, body = _asked(worker, decision)  # the supervisor answers again
    assert status == 200, body
    assert b"true" in body, "a query after the failure was answered without the decision"
    assert supervisor.asked == 2


def test_a_failed_ask_for_the_compacted_generation_is_tried_again(
        home: Path, private: PrivateStore) -> None:
    published = [0]
    supervisor = _Supervisor(private, failing={1})
    worker = _worker(home, private, supervisor, published)
    decision = _decide(home, "compacted")
    private.compact()
    published[0] += 1  # what the supervisor's compaction thread does
    assert _asked(worker, decision)[0] == 500
    status, body = _asked(worker, decision)
    assert status == 200 and b"true" in body, body
    assert worker.generation == str(private.published()[0])
