"""``cradle-kg mcp serve`` over stdio, driven by the official MCP client (``mcp.client``).

Each test starts the real server in a subprocess, as the configured demo agent.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS

from .conftest import ROOT, cli, env

Scenario = Callable[[ClientSession], Awaitable[None]]

#: no call may hang the test run: a server that never answers fails the test
LIMIT = timedelta(seconds=120)


def run(home: Path, scenario: Scenario, *extra: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cradle_kg", "mcp", "serve", "--home", str(home),
                                      "--agent", AGENT, *extra], env=env(), cwd=ROOT)

    async def main() -> None:
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write, read_timeout_seconds=LIMIT) as s:
            await s.initialize()
            await scenario(s)

    anyio.run(main)


def credit(account: str, amount: int) -> dict[str, Any]:
    return {"account": account, "amount": amount}


def ledger_for_home(home: Path) -> list[Any]:
    import sqlite3

    path = home / "demo-ledger" / "ledger.sqlite"
    with sqlite3.connect(path) as db:
        return list(db.execute("SELECT * FROM entries"))


def test_tools_are_listed_with_schemas_and_annotations(home: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert {"demo.ledger.credit", "demo.ledger.balance", "demo.ledger.close_account",
                "test.mcp.file_report"} <= set(tools)
        credit_tool = tools["demo.ledger.credit"]
        assert set(credit_tool.inputSchema["properties"]) == {"account", "amount"}
        assert credit_tool.outputSchema is not None
        assert credit_tool.annotations is not None
        assert credit_tool.annotations.readOnlyHint is False
        assert credit_tool.annotations.openWorldHint is True
        balance = tools["demo.ledger.balance"].annotations
        assert balance is not None and balance.readOnlyHint is True
        close = tools["demo.ledger.close_account"].annotations
        assert close is not None and close.destructiveHint is True
        assert close.idempotentHint is True

    run(home, scenario)


def test_allowed_denied_lying_and_replayed_calls(home: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        ok = await s.call_tool("demo.ledger.credit", credit("acct-1", 5))
        assert not ok.isError
        assert ok.structuredContent == {"ok": True, "applied": True, "account": "acct-1",
                                        "amount": 5}
        assert ok.meta is not None and ok.meta["cradle-kg/run"].startswith(f"run:{AGENT}/mcp-")
        assert ok.meta["cradle-kg/step"] == 1

        denied = await s.call_tool("demo.ledger.credit", credit("acct-1", 5000))
        assert denied.isError
        assert denied.structuredContent is not None
        assert denied.structuredContent["status"] == "denied"
        assert "forbidden_by_policy" in denied.structuredContent["reason_codes"]
        text = denied.content[0].text  # type: ignore[union-attr]
        assert "credits above 1000 need a human operator" in text

        lying = await s.call_tool("demo.ledger.credit_unreliable", credit("acct-2", 7))
        assert lying.isError and lying.structuredContent is not None
        assert lying.structuredContent["status"] == "verification_failed"
        assert "was not confirmed" in lying.content[0].text  # type: ignore[union-attr]

        key = {"cradle-kg/idempotency_key": "order-42"}
        first = await s.call_tool("demo.ledger.credit", credit("acct-3", 9), meta=key)
        again = await s.call_tool("demo.ledger.credit", credit("acct-3", 9), meta=key)
        assert not first.isError and not again.isError
        assert again.meta is not None and again.meta["cradle-kg/replayed"] is True
        assert again.meta["cradle-kg/step"] == 5  # steps follow the call order

    run(home, scenario)
    rows = ledger_for_home(home)
    assert sorted((r[1], r[2]) for r in rows) == [("acct-1", 5), ("acct-3", 9)]


def test_clarify_then_host_supplied_evidence(home: Path) -> None:
    with Runtime(home) as rt:
        ref = rt.add_evidence(b"the signed report", kind="document", collector="host")

    async def scenario(s: ClientSession) -> None:
        asked = await s.call_tool("test.mcp.file_report", {"case": "c-1"})
        assert asked.isError and asked.structuredContent is not None
        assert asked.structuredContent["status"] == "needs_clarification"
        assert asked.structuredContent["missing_facts"] == ["evidence"]
        # the host (not the model) supplies the evidence, through `_meta`
        done = await s.call_tool("test.mcp.file_report", {"case": "c-1"},
                                 meta={"cradle-kg/evidence_refs": [ref]})
        assert not done.isError, done.content
        assert done.structuredContent == {"filed": True, "case": "c-1"}
        bad = await s.call_tool("test.mcp.file_report", {"case": "c-1"},
                                meta={"cradle-kg/agent_id": "agent:someone-else"})
        assert bad.isError and "cradle-kg/agent_id" in bad.content[0].text  # type: ignore[union-attr]

    run(home, scenario)


def test_unknown_tool_and_bad_arguments_are_errors_not_crashes(home: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        with pytest.raises(McpError, match="unknown tool"):
            await s.call_tool("no.such.tool", {})
        wrong = await s.call_tool("demo.ledger.credit", {"account": "acct-1", "amount": -5})
        assert wrong.isError and wrong.structuredContent is not None
        assert "invalid_arguments" in wrong.structuredContent["reason_codes"]
        # deeper than the home's limit (32): refused by the strict loader before the SDK
        # reads it, as on HTTP — an error under the call's id (tests/security/test_31)
        deep: Any = "x"
        for _ in range(60):
            deep = [deep]
        with pytest.raises(McpError, match="nested too deep"):
            await s.call_tool("demo.ledger.credit", {"account": deep, "amount": 1})
        still = await s.call_tool("demo.ledger.balance", {"account": "acct-1"})
        assert not still.isError

    run(home, scenario)


def _approve_when_pending(home: Path, done: list[str]) -> None:
    """An approver, in another process, approves the first pending approval it sees."""
    import json

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        listed = cli("approvals", "list", "--home", str(home), "--format", "json")
        pending = [a for a in json.loads(listed.stdout or "[]") if a["status"] == "pending"]
        if pending:
            out = cli("approvals", "approve", pending[0]["id"], "--as", APPROVER, "--once",
                      "--home", str(home),
                      extra_env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
            done.append(out.stdout + out.stderr)
            return
        time.sleep(0.3)


@pytest.mark.slow
def test_approval_pending_then_approved_from_the_cli(home: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        key = {"cradle-kg/idempotency_key": "close-acct-9"}
        pending = await s.call_tool("demo.ledger.close_account", {"account": "acct-9"},
                                    meta=key)
        assert pending.isError and pending.structuredContent is not None
        assert pending.structuredContent["status"] == "awaiting_approval"
        approval_id = pending.structuredContent["approval_id"]
        assert "cradle-kg approvals approve " + approval_id in pending.content[0].text  # type: ignore[union-attr]
        out = cli("approvals", "approve", approval_id, "--as", APPROVER, "--once",
                  "--home", str(home),
                  extra_env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
        assert out.returncode == 0, out.stderr
        final = await s.call_tool("demo.ledger.close_account", {"account": "acct-9"},
                                  meta=key)
        assert not final.isError, final.content
        assert final.structuredContent == {"ok": True, "account": "acct-9"}

    run(home, scenario)


@pytest.mark.slow
def test_approval_wait_streams_progress_until_the_decision(home: Path) -> None:
    approved: list[str] = []
    notes: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        notes.append(message or "")

    async def scenario(s: ClientSession) -> None:
        approver = threading.Thread(target=_approve_when_pending, args=(home, approved))
        approver.start()
        final = await s.call_tool("demo.ledger.close_account", {"account": "acct-7"},
                                  progress_callback=progress,
                                  meta={"progressToken": "close-7"})
        await anyio.to_thread.run_sync(approver.join)
        assert not final.isError, final.content
        assert final.structuredContent == {"ok": True, "account": "acct-7"}

    run(home, scenario, "--approval-wait", "90")
    assert approved, "the approver never saw a pending approval"
    assert any("awaiting approval" in n for n in notes)
    assert any("decided: executed" in n for n in notes)


def test_a_line_longer_than_a_read_and_a_broken_byte_on_the_event_loop_transport(
        home: Path) -> None:
    """The stdio transport reads stdin on the event loop in chunks (no worker thread per
    line): a message several reads long is one message, and the calls go on after it.
    Past the home's input limits it is refused by the strict loader before the SDK reads
    it, as on HTTP (tests/security/test_31): a JSON-RPC error under the call's id."""
    from mcp.shared.exceptions import McpError

    async def scenario(s: ClientSession) -> None:
        long = "x" * 200_000  # > 3 reads of 64 KiB; refused by the home's input limit
        with pytest.raises(McpError, match="limit"):
            await s.call_tool("demo.ledger.balance", {"account": long})
        with pytest.raises(McpError, match="limit"):  # multi-byte characters across
            await s.call_tool("demo.ledger.balance",  # read boundaries: one message
                              {"account": "é€𝄞" * 30_000})
        fits = await s.call_tool("demo.ledger.balance", {"account": "é€𝄞" * 20_000})
        assert fits.isError and fits.structuredContent is not None  # > 3 reads, one call
        assert fits.structuredContent["status"] == "denied"  # no such account, at gate 1
        still = await s.call_tool("demo.ledger.balance", {"account": "acct-1"})
        assert not still.isError, still.content

    run(home, scenario)


def test_pipe_lines_split_and_decode_as_the_sdk_reads_stdin() -> None:
    import asyncio
    from functools import partial

    from cradle_kg.integrations.mcp_server import _PipeWriter, _StdinLines

    async def main() -> tuple[list[str], bytes]:
        reader = asyncio.StreamReader()
        data = '{"a": "é"}\n'.encode() + b'{"b": "\xff"}\r\n' + b"x" * 70_000 + b"\n" + b"tail"
        for i in range(0, len(data), 5):  # split anywhere, inside characters too
            reader.feed_data(data[i:i + 5])
        reader.feed_eof()
        lines = [line async for line in _StdinLines(partial(reader.read, 1 << 16))]

        class Sink(asyncio.Transport):
            def __init__(self) -> None:
                super().__init__()
                self.out = b""

            def write(self, data: bytes | bytearray | memoryview) -> None:
                self.out += bytes(data)

            def is_closing(self) -> bool:
                return False

            def close(self) -> None:
                pass

        sink = Sink()
        writer = asyncio.StreamWriter(sink, asyncio.streams.FlowControlMixin(), None,
                                      asyncio.get_running_loop())
        out = _PipeWriter(writer)
        await out.write('{"c": "ü"}\n')
        await out.flush()
        return lines, sink.out

    lines, written = asyncio.run(main())
    assert lines == ['{"a": "é"}\n', '{"b": "\ufffd"}\r\n', "x" * 70_000 + "\n", "tail"]
    assert written == '{"c": "ü"}\n'.encode()


@pytest.mark.parametrize("shared", [True, False], ids=["one-socket", "two-sockets"])
def test_stdio_over_sockets(home: Path, shared: bool) -> None:
    """A host that gives the server sockets (libuv's, Node's: a socketpair per stream), or
    one socket for both: stdin is read on the event loop, stdout is written by the SDK's
    own writer (asyncio's write transport would take the peer's writes for a close)."""
    import json
    import socket
    import subprocess

    mine, theirs = socket.socketpair()
    out_mine, out_theirs = (mine, theirs) if shared else socket.socketpair()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cradle_kg", "mcp", "serve", "--home", str(home),
         "--agent", AGENT], stdin=theirs, stdout=out_theirs, env=env(), cwd=ROOT)
    theirs.close()
    out_theirs.close()
    replies = out_mine.makefile("rb")

    def ask(i: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        mine.sendall(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                 "params": params}).encode() + b"\n")
        answer: dict[str, Any] = json.loads(replies.readline())
        assert answer["id"] == i, answer
        return answer

    try:
        mine.settimeout(120)
        out_mine.settimeout(120)
        init = ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "0"}})
        assert init["result"]["serverInfo"]["name"] == "cradle-kg"
        mine.sendall(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        for i in range(2, 5):  # several requests: the writer is not closed by the reads
            done = ask(i, "tools/call", {"name": "demo.ledger.balance",
                                         "arguments": {"account": "acct-1"}})
            assert done["result"]["isError"] is False, done
    finally:
        mine.shutdown(socket.SHUT_WR)
        assert proc.wait(timeout=60) == 0
        replies.close()
        mine.close()
        out_mine.close()


def test_session_streams_carry_the_lines_as_the_sdk_stdio_transport_does() -> None:
    """``mcp serve`` on pipes hands the SDK's session streams that read and write the
    pipes themselves (:mod:`cradle_kg.integrations.mcp_streams`, no relay task between):
    each line is read into what the SDK's ``stdio_server`` hands its session — a message,
    or the exception that refused it — and each message written as the bytes it writes."""
    from mcp import types
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    from cradle_kg.integrations.mcp_streams import LineReceiveStream, LineSendStream

    lines = ['{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}\n',
             '{"jsonrpc": "2.0", "method": 5}\n',
             '{"jsonrpc": "2.0", "method": "notifications/initialized"}']
    answer = SessionMessage(types.JSONRPCMessage(types.JSONRPCResponse(
        jsonrpc="2.0", id=7, result={"tools": [], "é": None, "nextCursor": "ü"})))

    async def given(fail: BaseException | None = None) -> Any:
        for line in lines:
            yield line
        if fail is not None:
            raise fail

    class Out:  # the text stdout the SDK's writer writes to
        def __init__(self) -> None:
            self.text = ""

        async def write(self, text: str) -> None:
            self.text += text

        async def flush(self) -> None:
            pass

    def shown(item: Any) -> Any:
        return (item.message.model_dump() if isinstance(item, SessionMessage)
                else type(item).__name__)

    async def sdk() -> tuple[list[Any], bytes]:
        out = Out()
        async with stdio_server(given(), out) as (read, write):  # type: ignore[arg-type]
            got = [shown(await read.receive()) for _ in lines]
            await write.send(answer)
            await write.aclose()
            with pytest.raises(anyio.EndOfStream):
                await read.receive()
        return got, out.text.encode()

    async def ours(fail: BaseException | None = None) -> tuple[list[Any], bytes]:
        written = bytearray()

        async def line(data: bytes) -> None:
            written.extend(data)

        async with LineReceiveStream(given(fail)) as read, LineSendStream(line) as write:
            got = [shown(item) async for item in read]  # to the end of stdin
            await write.send(answer)
        return got, bytes(written)

    expected = anyio.run(sdk)
    assert expected[0][1] == "ValidationError"  # the second line is no message
    assert anyio.run(ours) == expected
    # stdin that can no longer be read (the client left) ends the session as its end does
    assert anyio.run(ours, BrokenPipeError()) == expected

    async def to_a_client_that_left() -> None:
        async def gone(data: bytes) -> None:
            raise BrokenPipeError

        with pytest.raises(anyio.BrokenResourceError):  # the SDK drops such an answer
            await LineSendStream(gone).send(answer)

    anyio.run(to_a_client_that_left)
