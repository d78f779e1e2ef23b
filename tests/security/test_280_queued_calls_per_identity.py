"""An identity's calls that wait for its threads are bounded too.

Finding: ``test_270`` / ``test_271`` gave each identity 8 worker threads of its own; past
them its next call *waits* — a coroutine, the connection that carries it and its parsed
request (up to ``max_bytes``) — and nothing bounded how many waited but the process's open
files: with its own token, an agent holding the slow tool's 8 threads sent 78 more calls and
every one of them was taken and held, without end. Now at most
``WAITING_PER_IDENTITY`` (64) wait; past them a call is refused at once, 429
``quota_exceeded`` with ``Retry-After: 1`` (an error result on the MCP gateway), nothing of
it run or journaled, and the held calls run once let go.

A real ``cradle-kg serve`` on 127.0.0.1 and test_271's pack whose one tool answers late.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.errors import QuotaExceededError
from cradle_kg.server.threads import CALLS_PER_IDENTITY, WAITING_PER_IDENTITY, IdentityThreads
from tests.server.conftest import Server

from .mcp_http import MALLORY, token_for
from .test_271_api_calls_per_identity import HOLD, WAYS, serving

TAKEN = CALLS_PER_IDENTITY + WAITING_PER_IDENTITY
EXTRA = 6


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    with serving(tmp_path) as srv:
        yield srv


def test_calls_past_those_that_may_wait_are_refused_at_once(served: Server) -> None:
    assert served.home is not None
    path, body = WAYS["proposal"]
    mallory = {"Authorization": f"Bearer {token_for(served.home, MALLORY)}"}
    answers: list[tuple[int, dict[str, object], str | None]] = []
    lock = threading.Lock()

    def call(n: int) -> None:
        with contextlib.suppress(httpx.HTTPError):
            answer = httpx.post(served.url + path, json=body(n), headers=mallory,
                                timeout=HOLD * 4)
            with lock:
                answers.append((answer.status_code, answer.json(),
                                answer.headers.get("retry-after")))

    callers = [threading.Thread(target=call, args=(n,), daemon=True)
               for n in range(TAKEN + EXTRA)]
    for caller in callers:
        caller.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(answers) < EXTRA:
        time.sleep(0.2)
    time.sleep(1)  # any more that would come back early
    with lock:
        early = list(answers)
    # before: nothing came back — every call was taken and held on the slow tool
    assert len(early) == EXTRA, [(s, b) for s, b, _ in early]
    for status, payload, retry in early:
        assert status == 429, payload
        assert payload["detail"]["error"] == "quota_exceeded", payload  # type: ignore[index]
        assert retry == "1"
    (served.home / "slow-release").touch()
    for caller in callers:
        caller.join(HOLD * 2)
    executed = [p for s, p, _ in answers if s == 200]
    assert len(executed) == TAKEN and all(p["status"] == "executed" for p in executed)
    with Runtime(served.home, graph_sync=False) as rt:  # the refused left nothing behind
        received = [e for e in rt.journal.events() if e.kind == "proposal.received"
                    and e.actor == MALLORY]
    assert len(received) == TAKEN


def test_the_count_is_given_back_whatever_the_call_ends_in() -> None:
    threads = IdentityThreads(1, waiting=1)

    def boom() -> None:
        raise ValueError("the call failed")

    async def scenario() -> None:
        release = threading.Event()
        held = [asyncio.create_task(threads.run("a", release.wait)) for _ in range(2)]
        await asyncio.sleep(0.2)
        with pytest.raises(QuotaExceededError):  # one running, one waiting
            await threads.run("a", lambda: None)
        assert await threads.run("b", lambda: 7) == 7  # another identity is not held
        release.set()
        await asyncio.gather(*held)
        with pytest.raises(ValueError):
            await threads.run("a", boom)
        assert await threads.run("a", lambda: 8) == 8  # both counts given back

    asyncio.run(scenario())
