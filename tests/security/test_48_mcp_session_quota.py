"""One agent cannot take every MCP session of the HTTP gateway.

Finding: ``cradle-kg mcp serve --transport streamable-http`` (and ``mcp proxy`` on HTTP)
opened a new MCP session for every ``initialize`` an authenticated agent sent, and kept
it until the client deleted it or it was idle for 30 minutes. Measured: one agent's
token opened 2,000 sessions in 15 s, the server growing by ~61 KB a session (96 → 219 MB
for 1,500); the SDK (1.30) stops at 10,000 open sessions — about 600 MB — and then
refuses *every* agent's new session ("Too many open sessions", 503) until the idle ones
end, 30 minutes later (SDKs before 1.30 had neither the cap nor the idle end: memory
grew without bound). Now each agent holds at most ``--max-sessions-per-agent`` open
sessions (32 by default): the request that would open one more is an HTTP 429 with a
JSON-RPC error saying so and how to close one, and opens nothing; other agents are not
affected; a session closed with ``DELETE`` frees its place at once, an idle one when the
SDK ends it (:class:`cradle_kg.integrations.http_guard.SessionQuota`).

A real ``cradle-kg mcp serve`` over streamable HTTP with two agents' tokens, raw HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cradle_kg.integrations.http_guard import SessionQuota

from .mcp_http import ACCEPT, AGENT, INIT, MALLORY, Served, fresh, serve, token_for

#: a module whose set-up is long (servers, browsers, packs built): run first
pytestmark = pytest.mark.slow

LIMIT = 5
OPEN = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = fresh(tmp_path_factory.mktemp("quota"), "home")
    for server in serve(home, "--max-sessions-per-agent", str(LIMIT)):
        server.tokens = {a: token_for(home, a) for a in (AGENT, MALLORY)}
        yield server


def _open(client: httpx.Client, served: Served, agent: str) -> httpx.Response:
    return client.post(served.url, json=OPEN, headers={
        **ACCEPT, "Authorization": f"Bearer {served.tokens[agent]}"})


def _close(client: httpx.Client, served: Served, agent: str, sid: str) -> httpx.Response:
    return client.delete(served.url, headers={
        **ACCEPT, "Authorization": f"Bearer {served.tokens[agent]}", "mcp-session-id": sid,
        "mcp-protocol-version": "2025-06-18"})


def test_an_agent_holds_at_most_its_limit_and_others_are_not_affected(served: Served) -> None:
    with httpx.Client(timeout=30) as client:
        opened = [_open(client, served, MALLORY) for _ in range(LIMIT)]
        assert [r.status_code for r in opened] == [200] * LIMIT
        refused = _open(client, served, MALLORY)
        assert refused.status_code == 429, refused.text
        error = refused.json()["error"]
        assert f"`{MALLORY}` already holds {LIMIT} open MCP sessions" in error["message"]
        assert "DELETE" in error["message"]
        assert "mcp-session-id" not in refused.headers  # it opened nothing
        other = _open(client, served, AGENT)
        assert other.status_code == 200, other.text
        # a session closed frees its place at once
        sid = opened[0].headers["mcp-session-id"]
        assert _close(client, served, MALLORY, sid).status_code == 200
        again = _open(client, served, MALLORY)
        assert again.status_code == 200, again.text
        assert _open(client, served, MALLORY).status_code == 429
        for response in [*opened[1:], again]:
            assert _close(client, served, MALLORY,
                          response.headers["mcp-session-id"]).status_code == 200
        _close(client, served, AGENT, other.headers["mcp-session-id"])


def test_concurrent_openings_do_not_pass_the_limit_together(served: Served) -> None:
    async def race() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as client:
            return list(await asyncio.gather(*[client.post(served.url, json=OPEN, headers={
                **ACCEPT, "Authorization": f"Bearer {served.tokens[MALLORY]}"})
                for _ in range(4 * LIMIT)]))

    responses = asyncio.run(race())
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] * LIMIT + [429] * (3 * LIMIT), codes
    with httpx.Client(timeout=30) as client:
        for r in responses:
            if r.status_code == 200:
                assert _close(client, served, MALLORY,
                              r.headers["mcp-session-id"]).status_code == 200


class _FakeSdk:
    """Answers like the SDK's session manager: a new session on a POST without a session
    id, 404 for a session it does not hold (ended), 200 for a DELETE of one it holds."""

    def __init__(self) -> None:
        self.open: set[str] = set()
        self.n = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        sid = dict(scope["headers"]).get(b"mcp-session-id")
        headers: list[tuple[bytes, bytes]] = []
        if sid is None:
            self.n += 1
            new = f"s{self.n}"
            self.open.add(new)
            status, headers = 200, [(b"mcp-session-id", new.encode())]
        elif sid.decode() not in self.open:
            status = 404
        else:
            status = 200
            if scope["method"] == "DELETE":
                self.open.discard(sid.decode())
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})


class _User:
    username = MALLORY


def _request(quota: SessionQuota, method: str, sid: str | None = None) -> tuple[int, str | None]:
    scope = {"type": "http", "method": method, "user": _User(),
             "headers": [(b"mcp-session-id", sid.encode())] if sid else []}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(quota(scope, receive, send))
    start = sent[0]
    got = dict(start.get("headers", [])).get(b"mcp-session-id")
    return int(start["status"]), got.decode() if got else None


def test_an_idle_or_ended_session_frees_its_place(tmp_path: Path) -> None:
    now = [0.0]
    sdk = _FakeSdk()
    quota = SessionQuota(sdk, limit=2, idle=60.0, clock=lambda: now[0])
    first, second = (_request(quota, "POST")[1] for _ in range(2))
    assert _request(quota, "POST")[0] == 429
    now[0] = 59.0
    assert _request(quota, "POST", first)[0] == 200  # used: not idle any more
    now[0] = 100.0  # `second` idle for 100 s: the SDK ended it
    status, third = _request(quota, "POST")
    assert status == 200 and third is not None
    assert _request(quota, "POST")[0] == 429
    sdk.open.discard(str(first))  # ended by the SDK, seen by its 404
    assert _request(quota, "POST", first)[0] == 404
    assert _request(quota, "POST")[0] == 200
    assert second is not None
