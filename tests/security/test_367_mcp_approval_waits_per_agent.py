"""An agent's calls that wait for an approver are bounded.

Finding (twenty-second review): ``mcp serve --approval-wait S`` keeps a ``tools/call`` that
needs an approval open for up to S seconds when the client sends a ``progressToken``,
polling the journal four times a second (a progress notification, a token check and a
read of the journal each, on the process's shared worker pool). The call's worker thread is
given back before the wait (``test_270``'s 8 an agent), and nothing bounded how many of an
agent's calls waited: the same ``cradle-kg/idempotency_key`` answers every call with the
one pending approval (``test_236``), so not even ``waiting_per_agent`` counted them. With
its own token, ``agent:mallory`` sent 1,500 such calls (40 every 0.6 s): all of them
waited, the server grew from 100 to 249 MB and another agent's read went from 7 ms to
105 ms (median; 0.43 s at worst), growing with every wait more — and a client that goes
away leaves its waits running.

What must hold: at most :data:`WAITS_PER_AGENT` of an agent's calls wait at once in one
process; its next call that needs an approval is answered at once, ``awaiting_approval``
with the approval (as with ``--approval-wait 0``: calling again with the key reads the
outcome), and the calls that wait go on waiting.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from cradle_kg.integrations.mcp_server import WAITS_PER_AGENT

from .mcp_http import MALLORY, Client, Served, answer, serving_waits
from .test_229_mcp_wait_after_revocation import _pending

pytest.importorskip("mcp")

EXTRA = 3
CLOSE = {"name": "demo.ledger.close_account", "arguments": {"account": "acct-2"}}


@pytest.fixture
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serving_waits(tmp_path_factory.mktemp("mcp-waits"), "300", MALLORY)


def test_an_agent_s_waits_past_the_bound_are_answered_at_once(served: Served) -> None:
    client = Client(served.url, served.tokens[MALLORY])
    answered: list[dict[str, Any]] = []

    def waiting(n: int) -> None:
        with contextlib.suppress(httpx.HTTPError):  # the server stops at the end
            got = answer(client.post_json({"jsonrpc": "2.0", "id": 100 + n,
                                           "method": "tools/call", "params": {
                                               **CLOSE, "_meta": {
                                                   "progressToken": n,
                                                   "cradle-kg/idempotency_key": "k"}}}))
            answered.append(got)

    client.http.timeout = httpx.Timeout(330)
    first = threading.Thread(target=waiting, args=(0,), daemon=True)
    first.start()
    approval = _pending(served)  # one approval; every later call is answered with it
    callers = [threading.Thread(target=waiting, args=(n,), daemon=True)
               for n in range(1, WAITS_PER_AGENT + EXTRA)]
    for caller in callers:
        caller.start()
    deadline = time.monotonic() + 60
    while len(answered) < EXTRA and time.monotonic() < deadline:
        time.sleep(0.2)
    # before: none answered until the 300 s of the wait had passed, every call waiting
    assert len(answered) == EXTRA, len(answered)
    for got in answered:
        result = got["result"]
        assert result["_meta"]["cradle-kg/status"] == "awaiting_approval", result
        assert result["structuredContent"]["approval_id"] == approval, result
    # the others still wait (the approval is pending): WAITS_PER_AGENT of them
    assert sum(caller.is_alive() for caller in [first, *callers]) == WAITS_PER_AGENT
