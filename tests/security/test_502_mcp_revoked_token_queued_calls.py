"""On the MCP gateway, a call that waits for one of its agent's threads runs only if its
token still holds.

Finding (twenty-fifth review, beside ``test_500``): ``mcp serve --transport
streamable-http`` authenticates a request when it arrives; a ``tools/call`` then waits for
one of its agent's threads (8 run at once, 64 more may wait). ``test_229`` made a call
waiting for an *approver* check its token at each poll, but a call waiting for a *thread*
was never checked again: ``agent:mallory``'s token held its 8 threads with a tool that
answers late and queued 64 more calls; the operator revoked the token (its next request is
a 401), and every one of the 64 was then journaled and run under mallory's name, one after
the other, and its output handed to the revoked client.

Now the call checks on its thread, before anything is run, that the credentials it came
with still authenticate its agent (the check ``test_229``'s wait makes): a revoked token's
waiting calls are refused (``refused``, nothing journaled, no tool run).

A real ``cradle-kg mcp serve`` over HTTP on 127.0.0.1 and the slow tool's home of
``test_271``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cradle_kg.home import Home
from cradle_kg.server.auth import revoke_agent_token
from cradle_kg.server.threads import CALLS_PER_IDENTITY, WAITING_PER_IDENTITY

from .mcp_http import MALLORY, Client, Served, serve, token_for
from .test_271_api_calls_per_identity import HOLD, queued_behind_held, slow_home


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    home = slow_home(tmp_path / "home")
    try:
        yield from serve(home)
    finally:
        (home / "slow-release").touch()  # the held calls end


def _status(answer: dict[str, Any]) -> str:
    return str(answer.get("result", {}).get("_meta", {}).get("cradle-kg/status"))


def test_a_revoked_token_s_waiting_calls_are_refused(served: Served) -> None:
    mallory = Client(served.url, token_for(served.home, MALLORY))
    answers: dict[int, dict[str, Any]] = {}
    lock = threading.Lock()

    def send(n: int) -> None:
        with contextlib.suppress(httpx.HTTPError, IndexError, ValueError):
            mallory.http.timeout = httpx.Timeout(HOLD * 4)
            answer = mallory.call("test.slow.wait", {"n": n})
            with lock:
                answers[n] = answer

    callers, extra, quota = queued_behind_held(served.home, send, answers, lock,
                                               lambda a: _status(a) == "refused")
    assert "quota_exceeded" in answers[quota[0]]["result"]["structuredContent"]["reason_codes"]

    assert revoke_agent_token(Home(served.home), MALLORY)
    assert mallory.post_json({"jsonrpc": "2.0", "id": 999, "method": "tools/list"}
                             ).status_code == 401
    (served.home / "slow-release").touch()  # the running calls end, the waiting ones go on
    for caller in callers:
        caller.join(HOLD * 2)

    assert [_status(answers[n]) for n in range(CALLS_PER_IDENTITY)] \
        == ["executed"] * CALLS_PER_IDENTITY
    queued = [answers[n] for n in extra if n not in quota]
    assert len(queued) == WAITING_PER_IDENTITY
    # before: each was run under mallory's name once a thread was free ("executed")
    said = sorted({_status(a) for a in queued})
    assert said == ["refused"], said
    assert all("no longer authenticate" in a["result"]["structuredContent"]["reasons"][0]
               for a in queued)
    entered = (served.home / "slow-entered").read_text().splitlines()
    assert len(entered) == CALLS_PER_IDENTITY  # the tool ran for the running calls alone
