"""``cradle-kg mcp serve --transport streamable-http``: bearer tokens, the official client,
and raw JSON-RPC that is malformed (an error response, never a crash)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from cradle_kg.demo.scenario import AGENT, DEMO_TOKENS, prepare_home
from cradle_kg.storage.opening import open_home_journal
from tests import oneshot

from ..security.mcp_http import answer as rpc_answer
from .conftest import ROOT, cli, env

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

#: no call may hang the test run: a server that never answers fails the test
LIMIT = timedelta(seconds=120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's home: its tests share one server on it (a start is a process, ~1 s of
    CPU); the one that reads the journal counts what its own session added."""
    root = tmp_path_factory.mktemp("mcp-http") / "home"
    prepare_home(root)
    return root


@pytest.fixture(scope="module")
def server(http_home: Path) -> Iterator[tuple[str, str]]:
    home = http_home
    issued = cli("api-token", "issue", AGENT, "--home", str(home))
    assert issued.returncode == 0, issued.stderr
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cradle_kg", "mcp", "serve", "--home", str(home),
         "--transport", "streamable-http", "--port", str(port)],
        cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp", issued.stdout.strip()
    proc.terminate()
    proc.wait(timeout=30)


def _rpc(method: str, params: dict[str, Any] | None = None, ident: int | None = 1
         ) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        body["params"] = params
    if ident is not None:
        body["id"] = ident
    return body


def test_no_token_bad_token_and_approver_token_get_401(server: tuple[str, str]) -> None:
    url, _ = server
    init = _rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "0"}})
    for headers in ({}, {"Authorization": "Bearer ck_not-a-token"},
                    {"Authorization": f"Bearer {DEMO_TOKENS['user:bob']}"}):
        response = oneshot.post(url, json=init, headers={**ACCEPT, **headers}, timeout=30)
        assert response.status_code == 401, (headers, response.text)


def test_a_session_through_the_official_client_acts_as_the_tokens_agent(
        server: tuple[str, str], http_home: Path) -> None:
    url, token = server
    home = http_home
    with open_home_journal(home) as journal:
        before = sum(1 for e in journal.events() if e.kind == "proposal.received")

    async def main() -> None:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                     timeout=60) as http, \
                streamable_http_client(url, http_client=http) as (read, write, _), \
                ClientSession(read, write, read_timeout_seconds=LIMIT) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            assert "demo.ledger.credit" in names
            ok = await s.call_tool("demo.ledger.credit", {"account": "acct-h", "amount": 3})
            assert not ok.isError, ok.content
            denied = await s.call_tool("demo.ledger.credit",
                                       {"account": "acct-h", "amount": 3000})
            assert denied.isError

    anyio.run(main)
    with open_home_journal(home) as journal:
        received = [e for e in journal.events() if e.kind == "proposal.received"]
    assert [e.actor for e in received[before:]] == [AGENT, AGENT]


def test_malformed_tools_call_is_a_json_rpc_error(server: tuple[str, str]) -> None:
    url, token = server
    auth = {**ACCEPT, "Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=30) as http:
        init = http.post(url, headers=auth, json=_rpc(
            "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "0"}}))
        assert init.status_code == 200, init.text
        sid = init.headers["mcp-session-id"]
        headers = {**auth, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
        http.post(url, headers=headers, json=_rpc("notifications/initialized", ident=None))
        for i, params in enumerate(({"name": 5, "arguments": "x"},
                                    {"arguments": {"account": "a"}},
                                    {"name": "demo.ledger.credit", "arguments": [1, 2]},
                                    {"name": "no.such.tool", "arguments": {}}), start=2):
            answer = rpc_answer(http.post(url, headers=headers, json=_rpc("tools/call", params,
                                                                       ident=i)))
            assert answer["id"] == i and "error" in answer, answer
            assert answer["error"]["code"] in (-32602, -32600), answer
        alive = rpc_answer(http.post(url, headers=headers, json=_rpc("tools/list", ident=99)))
        assert alive["result"]["tools"], alive
