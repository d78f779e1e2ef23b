"""The MCP gateway on stdio reads a message with the strict loader, as on HTTP.

Finding: ``test_14`` put the strict JSON loader in front of the streamable-HTTP gateway
(a key given twice, a body that is not UTF-8, runaway nesting, an oversized body). The
stdio transport — the default of ``cradle-kg mcp serve`` and of ``mcp proxy`` — handed
each line straight to the SDK: ``"amount": 1, "amount": 50`` credited 50 (the SDK reads
last-wins, a host that logs or shows the first reads 1); a byte that is not UTF-8 inside
an argument was silently replaced by U+FFFD and the call ran on text nobody sent; and a
line without an end grew the server's memory without bound (400 MB sent, 400 MB more
resident: one client could exhaust the host). Each line now goes through the HTTP
guard's check (:func:`cradle_kg.integrations.http_guard.refusal`, one code path): a refused
line is answered with a JSON-RPC error (``-32700`` / ``-32600``) under its id — before,
a line the SDK could not parse got no answer at all and its caller waited — a line
longer than ``max_bytes`` is dropped as it arrives, never buffered, and answered with id
``null``; nothing is journaled, and the session goes on.

Real ``cradle-kg mcp serve`` subprocesses on pipes, raw JSON-RPC lines.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, ledger_for

from .jsonl_process import JsonLinesProcess


class Stdio(JsonLinesProcess):
    """A ``cradle-kg mcp serve`` on pipes, read line by line in a thread."""

    def __init__(self, home: Path) -> None:
        super().__init__(["mcp", "serve", "--home", str(home), "--agent", AGENT])

    def close(self) -> str:
        self.stop()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode("utf-8", "replace")


@pytest.fixture
def stdio(home: Path) -> Iterator[Stdio]:
    server = Stdio(home)
    yield server
    server.close()


def _credit_line(rid: int, arguments: str) -> bytes:
    return (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":'
            b'"demo.ledger.credit","arguments":' % rid) + arguments.encode("utf-8") + b"}}"


def _events(home: Path) -> int:
    with Runtime(home) as rt:
        return sum(1 for _ in rt.journal.events())


def _balance(home: Path) -> int:
    with Runtime(home) as rt:
        return ledger_for(rt).balance("acct-1")


def _is_parse_error(m: dict[str, Any], rid: int | None = None) -> bool:
    """A refusal by the strict loader, under the refused message's id (none when the
    message was too long to be read at all)."""
    return m.get("id") == rid and m.get("error", {}).get("code") in (-32700, -32600)


def test_a_key_given_twice_or_bytes_not_utf8_are_refused_on_stdio(
        home: Path, stdio: Stdio) -> None:
    before = _events(home)
    stdio.send(_credit_line(2, '{"account":"acct-1","amount":1,"amount":50}'))
    refused = stdio.wait_for(lambda m: m.get("id") in (2, None))
    assert _is_parse_error(refused, 2), refused
    assert "twice" in refused["error"]["message"] or "duplicate" in refused["error"][
        "message"].lower(), refused
    stdio.send(_credit_line(3, '{"account":"acct-\xff1","amount":5}').replace(
        "\xff".encode(), b"\xff"))
    refused = stdio.wait_for(lambda m: m.get("id") in (3, None))
    assert _is_parse_error(refused, 3), refused
    # the session goes on: a good call is answered under its id
    stdio.send(_credit_line(4, '{"account":"acct-1","amount":7}'))
    ok = stdio.wait_for(lambda m: m.get("id") == 4)
    assert ok["result"]["structuredContent"]["amount"] == 7
    log = stdio.close()
    assert "Traceback" not in log, log
    assert _balance(home) == 7
    with Runtime(home) as rt:  # the refused lines journaled nothing: the good call only
        kinds = [e.kind for e in rt.journal.events()][before:]
    assert kinds.count("proposal.received") == 1, kinds


def test_a_line_without_an_end_is_not_buffered(home: Path, stdio: Stdio) -> None:
    start = stdio.rss_mb()
    chunk = b"x" * (1 << 20)
    for _ in range(256):  # 256 MB, no newline: far past max_bytes (1 MiB)
        stdio.send(chunk, end=False)  # a pipe write returns once the server has read most
    time.sleep(0.5)
    grown = stdio.rss_mb() - start
    assert grown < 64, f"the server grew by {grown} MB for one unterminated line"
    stdio.send(b"")  # the line ends at last
    refused = stdio.wait_for(_is_parse_error)
    assert "limit" in refused["error"]["message"], refused
    stdio.send(_credit_line(5, '{"account":"acct-1","amount":3}'))
    assert stdio.wait_for(lambda m: m.get("id") == 5)["result"]["structuredContent"][
        "amount"] == 3
