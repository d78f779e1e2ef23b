"""A call waiting on an approval whose key already ran ends, and journals once.

Finding (twenty-second review): an agent's idempotency key is one effect whichever run
names it, but "another run asks on its own" (``test_236``): with its own token,
``agent:mallory`` asked to close ``acct-2`` under the key ``k`` in its session's run, then
again under the same key in a second run of its own (``cradle-kg/run``), this call with a
``progressToken`` to ``mcp serve --approval-wait``. Two approvals waited for one effect.
The approver approved both (two requests that look alike in the inbox): the first ran the
closure, the second's action was the key's, replayed. A replay records no outcome of its
own and consumes nothing, so the journal kept saying the second call waited, and its
approval stayed approved and unused — and the waiting call, at each of its four polls a
second, found that approval approved and resumed its run again: ``proposal.received``,
``decision.made``, ``action.replayed``, three events a poll (one waiting call: 115
replays, 345 events in 30 s) for as long as the wait lasted, every waiting call of the
agent alike, and the client was told at the end that nothing had run yet.

What must hold: the wait resumes an approved call once; when the key's action had run
already, the call ends with that action's recorded outcome (``replayed``), and its run is
not resumed again.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus

from .mcp_http import MALLORY, Client, Served, answer, serving_waits

pytest.importorskip("mcp")

CLOSE = {"name": "demo.ledger.close_account", "arguments": {"account": "acct-2"}}
SECOND = f"run:{MALLORY}/second"


@pytest.fixture
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serving_waits(tmp_path_factory.mktemp("mcp-replayed"), "300", MALLORY)


def _pending(served: Served, count: int) -> list[str]:
    deadline = time.monotonic() + 20
    while True:
        with Runtime(served.home, load_plugins=False, recover=False) as rt:
            waiting = [s.approval.id for s in rt.approvals.all()
                       if s.approval.status is ApprovalStatus.PENDING]
        if len(waiting) >= count:
            return waiting
        assert time.monotonic() < deadline, waiting
        time.sleep(0.1)


def test_a_wait_on_a_key_that_ran_ends_with_its_outcome(served: Served) -> None:
    client = Client(served.url, served.tokens[MALLORY])
    client.http.timeout = httpx.Timeout(330)
    first = client.call(CLOSE["name"], CLOSE["arguments"], {"cradle-kg/idempotency_key": "k"})
    assert first["result"]["_meta"]["cradle-kg/status"] == "awaiting_approval", first
    got: dict[str, Any] = {}

    def waiting() -> None:
        with contextlib.suppress(httpx.HTTPError):  # the server stops at the end
            got["answer"] = answer(client.post_json({
                "jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {
                    **CLOSE, "_meta": {"progressToken": "p", "cradle-kg/run": SECOND,
                                       "cradle-kg/idempotency_key": "k"}}}))

    waiter = threading.Thread(target=waiting, daemon=True)
    waiter.start()
    approvals = _pending(served, 2)
    with Runtime(served.home) as rt:  # the approver, where the tool runs (`serve`'s page)
        for approval in approvals:
            rt.decide_approval(approval, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                               status=ApprovalStatus.APPROVED)
    waiter.join(timeout=30)
    # before: still waiting (300 s), resuming the second run at every poll
    assert not waiter.is_alive(), "the wait went on after its approval was decided"
    result = got["answer"]["result"]
    assert result["_meta"]["cradle-kg/status"] == "executed", result
    assert result["_meta"]["cradle-kg/replayed"] is True, result
    assert result["structuredContent"]["account"] == "acct-2", result
    time.sleep(2)  # eight polls, were the wait still resuming
    kinds = [e.kind for e in served.events()]
    assert kinds.count("action.intent") == 1, kinds
    # one replay when the approver decided, at most one when the wait read it: before,
    # three events a poll (some 100 by now)
    assert kinds.count("action.replayed") <= 2, kinds.count("action.replayed")
