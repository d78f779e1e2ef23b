"""A message on MCP's stdio that is JSON but no JSON-RPC message is answered, under its id.

Finding (agent-facing doors review): ``test_31`` answers a line the strict loader refuses
with a JSON-RPC error under its id. A line that *is* JSON but no message the SDK reads —
a batch (a JSON array: MCP 2025-06-18 has none), ``"jsonrpc": "1.0"``, an id that is an
object or ``null`` — passed the loader and the SDK answered it with a log notification
(``"Internal Server Error"``) and a page of validation errors on stderr, but never the
request: a client that sent ``[{"id": 10, ...}, {"id": 11, ...}]`` waited for 10 and 11
forever (``cradle-kg mcp serve`` and ``mcp proxy`` on stdio alike). On streamable HTTP
(where the SDK answers the other shapes ``400`` itself) a request whose id is an object,
``null`` or a boolean was taken for a notification: ``202 Accepted``, never answered.

What must hold: each such line gets a JSON-RPC ``-32600`` error — under each request's
id that can be read (every request of a batch), else under ``null`` — nothing is
journaled, and the session goes on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home

from .jsonl_process import JsonLinesProcess
from .mcp_http import Client, Served, fresh, serve, token_for

pytest.importorskip("mcp")


@pytest.fixture(scope="module")
def stdio_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("mcp-stdio-envelope") / "home"
    prepare_home(home)
    return home


@pytest.fixture(scope="module")
def stdio(stdio_home: Path) -> Iterator[JsonLinesProcess]:
    """One ``mcp serve`` for the module (a start is ~1 s of CPU): each test takes every
    answer its lines cause, so the next starts from none — and the session going on after
    each refused line is part of what they show."""
    server = JsonLinesProcess(["mcp", "serve", "--home", str(stdio_home), "--agent", AGENT])
    yield server
    server.stop()


def _events(home: Path) -> int:
    with Runtime(home) as rt:
        return sum(1 for _ in rt.journal.events())


def _invalid(m: dict[str, Any], rid: Any) -> bool:
    return "id" in m and m["id"] == rid and m.get("error", {}).get("code") == -32600


CREDIT = (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":'
          b'"demo.ledger.credit","arguments":{"account":"acct-1","amount":5}}}')


def test_a_batch_is_answered_for_each_request(stdio_home: Path,
                                             stdio: JsonLinesProcess) -> None:
    home = stdio_home
    before = _events(home)
    stdio.send(b"[" + CREDIT % 10 + b"," + CREDIT % 11
               + b',{"jsonrpc":"2.0","method":"notifications/initialized"}]')
    for rid in (10, 11):  # before: no answer, ever
        found = stdio.wait_for(lambda m, rid=rid: m.get("id") == rid, timeout=15)
        assert _invalid(found, rid), found
        assert "batch" in found["error"]["message"], found
    assert _events(home) == before  # neither credit ran


@pytest.mark.parametrize(("line", "rid"), [
    (b'{"jsonrpc":"1.0","id":12,"method":"ping"}', 12),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None),
    (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', None),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', None),
    (b'{"id":13,"method":"ping"}', 13),
    (b'"ping"', None),
], ids=["jsonrpc-1.0", "id-object", "id-null", "id-bool", "no-jsonrpc", "a-string"])
def test_no_message_is_answered_under_its_id(stdio: JsonLinesProcess, line: bytes,
                                             rid: Any) -> None:
    stdio.send(line)
    found = stdio.wait_for(lambda m: "id" in m and m["id"] == rid, timeout=15)
    assert _invalid(found, rid), found
    stdio.request(40, "ping", {})  # the session goes on
    assert stdio.wait_for(lambda m: m.get("id") == 40)["result"] == {}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = fresh(tmp_path_factory.mktemp("mcp-http-envelope"), "home")
    for running in serve(home):
        running.tokens = {AGENT: token_for(home, AGENT)}
        yield running


@pytest.mark.parametrize("body", [
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
    b'{"jsonrpc":"2.0","id":null,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":false,"method":"tools/list"}',
], ids=["id-object", "id-null", "id-bool"])
def test_on_http_a_request_is_no_notification(served: Served, body: bytes) -> None:
    client = Client(served.url, served.tokens[AGENT])
    try:
        r = client.post_raw(body)
        # before: taken for a notification — 202 Accepted, never answered
        assert r.status_code == 400, (r.status_code, r.text)
        assert _invalid(r.json(), None), r.text
        assert client.alive()
    finally:
        client.close()


def test_a_response_is_never_answered(stdio: JsonLinesProcess) -> None:
    # a client's error response with a null id: answering it could ping-pong for ever
    assert not [m for m in stdio.lines if "error" in m]  # earlier tests took theirs
    stdio.send(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}')
    stdio.request(41, "ping", {})
    assert stdio.wait_for(lambda m: m.get("id") == 41)["result"] == {}
    time.sleep(0.3)
    assert not [m for m in stdio.lines if "error" in m], stdio.lines
