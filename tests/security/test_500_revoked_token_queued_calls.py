"""A call that waits for one of its identity's threads runs only if its token still holds.

Finding (twenty-fifth review, the JSON API's write doors): ``cradle-kg serve``
authenticates a request when it arrives; a governed call then waits for one of its
identity's threads (8 run at once, 64 more may wait: ``server.threads``). A token revoked
(``cradle-kg api-token revoke``), or replaced by a new one (``api-token issue``), while its
calls waited did not stop them: ``agent:mallory``'s token held its 8 threads with a tool
that answers late and queued 64 more proposals (or workflow starts) behind them; the
operator revoked the token (its next request is a 401), and every one of the 64 queued
calls was then submitted, journaled and run under mallory's name, one after the other, for
as long as the tool took — the same hole ``test_229`` closed for a call waiting on an
approval.

Now a call checks, on its thread and before it does anything, that its token still
authenticates the identity it arrived as, with the same roles (``api_common.
CallerThreads``): a revoked or replaced token's waiting calls are refused 401, nothing of
them journaled and no tool run.

A real ``cradle-kg serve`` on 127.0.0.1 over the slow tool's home of ``test_271``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cradle_kg.home import Home
from cradle_kg.server.auth import revoke_agent_token
from cradle_kg.server.threads import CALLS_PER_IDENTITY, WAITING_PER_IDENTITY
from tests.server.conftest import Server

from .mcp_http import MALLORY, token_for
from .test_271_api_calls_per_identity import DONE, HOLD, WAYS, queued_behind_held, serving


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    with serving(tmp_path) as srv:
        yield srv


@pytest.mark.parametrize("way", WAYS)
def test_a_revoked_token_s_waiting_calls_are_refused(served: Server, way: str) -> None:
    assert served.home is not None
    path, body = WAYS[way]
    mallory = {"Authorization": f"Bearer {token_for(served.home, MALLORY)}"}
    answers: dict[int, httpx.Response] = {}
    lock = threading.Lock()

    def send(n: int) -> None:
        with contextlib.suppress(httpx.HTTPError):
            answer = httpx.post(served.url + path, json=body(n), headers=mallory,
                                timeout=HOLD * 4)
            with lock:
                answers[n] = answer

    # mallory's threads held by the slow tool, then as many as may wait, and one more
    callers, extra, refused = queued_behind_held(served.home, send, answers, lock,
                                                 lambda a: a.status_code == 429)

    # the operator revokes the token: its next request is a 401
    assert revoke_agent_token(Home(served.home), MALLORY)
    assert httpx.get(served.url + "/api/whoami", headers=mallory,
                     timeout=30).status_code == 401
    (served.home / "slow-release").touch()  # the running calls end, the waiting ones go on
    for caller in callers:
        caller.join(HOLD * 2)

    # the calls that were running when the token was revoked end as they began
    assert [answers[n].json().get("status") for n in range(CALLS_PER_IDENTITY)] \
        == [DONE[way]] * CALLS_PER_IDENTITY
    queued = {n: answers[n] for n in extra if n not in refused}
    assert len(queued) == WAITING_PER_IDENTITY
    # before: each was run under mallory's name once a thread was free (200, executed)
    statuses = sorted({a.status_code for a in queued.values()})
    assert statuses == [401], statuses
    assert all(a.json()["detail"]["error"] == "unauthenticated" for a in queued.values())
    # nothing of them run: the tool was entered by the running calls alone
    entered = (served.home / "slow-entered").read_text().splitlines()
    assert len(entered) == CALLS_PER_IDENTITY
