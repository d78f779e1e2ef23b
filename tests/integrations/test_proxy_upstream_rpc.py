"""What a stdio upstream sends besides answers, through the proxy's own JSON-RPC client.

``cradle-kg mcp proxy -- COMMAND`` speaks to its upstream with a client of its own
(:mod:`cradle_kg.integrations.upstream_stdio`), not the SDK's session. What the SDK's
session did for the proxy it must still do: answer the upstream's requests (``ping``;
sampling, elicitation and roots refused, as the SDK refuses them when its client offers
none; an unknown method), go on past notifications that arrive in the middle of a call, and
mark the tool list stale on ``notifications/tools/list_changed`` — so that a tool changed
during a call is refused from the next call on. A call past its deadline fails and the
upstream is told (``notifications/cancelled``).

The proxy runs as a real subprocess, driven by the official MCP client, in front of an
upstream written here (a plain script speaking JSON-RPC lines) that writes what it received
to a log.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from cradle_kg.demo.scenario import AGENT

from .conftest import ROOT, cli, env

#: the upstream: ``ask`` sends the client four requests and two notifications before its
#: answer and answers with the replies it read; ``shift`` says its tool list changed (and
#: changes it) before its answer; ``mute`` never answers. Every line it reads is logged.
UPSTREAM = r'''
import json
import sys
import threading

log = open(sys.argv[1], "a")
out = sys.stdout.buffer
version = {"shift": 1, "later": 1}
writing = threading.Lock()


def send(obj):
    with writing:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()


def tools():
    return [{"name": "ask", "inputSchema": {"type": "object"}},
            {"name": "mute", "inputSchema": {"type": "object"}},
            {"name": "pingme", "inputSchema": {"type": "object"}},
            {"name": "shift", "inputSchema": {"type": "object"},
             "description": "version %d" % version["shift"]},
            {"name": "later", "inputSchema": {"type": "object"},
             "description": "version %d" % version["later"]}]


def answer(rid):
    send({"jsonrpc": "2.0", "id": rid, "result": {
        "content": [{"type": "text", "text": "{}"}], "structuredContent": {"v": 1},
        "isError": False}})


lines = iter(sys.stdin.buffer)
for raw in lines:
    msg = json.loads(raw)
    log.write(json.dumps(msg) + "\n")
    log.flush()
    rid, method = msg.get("id"), msg.get("method")
    if method is None or rid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "chatty", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools()}})
    elif method == "tools/call" and msg["params"]["name"] == "ask":
        asked = {"up-ping": "ping", "up-sample": "sampling/createMessage",
                 "up-roots": "roots/list", "up-what": "no/such/method"}
        for ask_id, ask in asked.items():
            send({"jsonrpc": "2.0", "id": ask_id, "method": ask, "params": {}})
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "working"}})
        send({"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": 7, "progress": 1}})
        replies = {}
        while len(replies) < len(asked):
            reply = json.loads(next(lines))
            log.write(json.dumps(reply) + "\n")
            log.flush()
            replies[reply["id"]] = {k: reply[k] for k in ("result", "error") if k in reply}
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": json.dumps(replies)}],
            "structuredContent": replies, "isError": False}})
    elif method == "tools/call" and msg["params"]["name"] == "shift":
        version["shift"] += 1
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        answer(rid)
    elif method == "tools/call" and msg["params"]["name"] == "later":
        answer(rid)  # then, between this call and the next, the list changes
        version["later"] += 1
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif method == "tools/call" and msg["params"]["name"] == "soon":
        answer(rid)  # the notice a moment after the answer: not read with it
        threading.Timer(0.005, send, [{"jsonrpc": "2.0",
                                       "method": "notifications/tools/list_changed"}]).start()
    elif method == "tools/call" and msg["params"]["name"] == "pingme":
        answer(rid)  # then, a while after the call, with no call in flight, a ping
        threading.Timer(0.5, send, [{"jsonrpc": "2.0", "id": "idle-ping",
                                     "method": "ping"}]).start()
    elif method == "tools/call":
        pass  # `mute`: no answer, ever
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}})
'''
CONTRACTS = "tools:\n" + "".join(f"  {n}:\n    side_effect: read_only\n    target: 'test:{n}'\n"
                                 for n in ("ask", "mute", "shift", "later", "pingme"))


def _received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def _proxy(home: Path, tmp: Path) -> tuple[StdioServerParameters, Path]:
    script, log, contracts = tmp / "chatty.py", tmp / "received.jsonl", tmp / "c.yaml"
    script.write_text(UPSTREAM)
    contracts.write_text(CONTRACTS)
    return StdioServerParameters(command=sys.executable, env=env(), cwd=ROOT, args=[
        "-m", "cradle_kg", "mcp", "proxy", "--home", str(home), "--agent", AGENT,
        "--contracts", str(contracts), "--prefix", "test.up.", "--",
        sys.executable, str(script), str(log)]), log


def _session(params: StdioServerParameters, scenario: Any) -> None:
    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(
                read, write, read_timeout_seconds=timedelta(seconds=120)) as s:
            await s.initialize()
            await scenario(s)

    anyio.run(main)


def test_the_upstreams_requests_are_answered_and_notifications_do_not_break_a_call(
        home: Path, tmp_path: Path) -> None:
    params, log = _proxy(home, tmp_path)
    results: list[Any] = []

    async def scenario(s: ClientSession) -> None:
        results.append(await s.call_tool("test.up.ask", {}))
        results.append(await s.call_tool("test.up.ask", {}))  # the session goes on

    _session(params, scenario)
    for result in results:
        assert result.isError is not True, result.content
        replies = result.structuredContent
        assert replies["up-ping"] == {"result": {}}
        assert replies["up-sample"]["error"]["message"] == "Sampling not supported"
        assert replies["up-roots"]["error"]["message"] == "List roots not supported"
        assert replies["up-sample"]["error"]["code"] == -32600
        assert replies["up-what"]["error"]["code"] == -32601
    got = _received(log)
    assert [m.get("method") for m in got[:2]] == ["initialize", "notifications/initialized"]
    assert got[0]["params"]["capabilities"] == {}  # offers no sampling, elicitation, roots


def test_a_tool_list_changed_during_a_call_refuses_the_tool_from_the_next_call(
        home: Path, tmp_path: Path) -> None:
    params, log = _proxy(home, tmp_path)
    results: list[Any] = []

    async def scenario(s: ClientSession) -> None:
        results.append(await s.call_tool("test.up.shift", {}))
        results.append(await s.call_tool("test.up.shift", {}))
        results.append(await s.call_tool("test.up.ask", {}))  # unchanged: still served

    _session(params, scenario)
    first, second, other = results
    assert first.isError is not True, first.content
    assert second.isError is True
    assert "changed since it was reviewed" in second.content[0].text
    assert other.isError is not True, other.content
    calls = [m["params"]["name"] for m in _received(log) if m.get("method") == "tools/call"]
    assert calls == ["shift", "ask"]  # the changed tool was not called again
    assert [m.get("method") for m in _received(log)].count("tools/list") == 2


def test_a_tool_list_changed_between_two_calls_refuses_the_tool_at_the_next(
        home: Path, tmp_path: Path) -> None:
    """The notice comes after the call's answer, with no call in flight: it is read before
    the next call is made (the SDK's session read it as it came)."""
    params, log = _proxy(home, tmp_path)
    results: list[Any] = []

    async def scenario(s: ClientSession) -> None:
        results.append(await s.call_tool("test.up.later", {}))
        results.append(await s.call_tool("test.up.later", {}))

    _session(params, scenario)
    first, second = results
    assert first.isError is not True, first.content
    assert second.isError is True
    assert "changed since it was reviewed" in second.content[0].text
    calls = [m["params"]["name"] for m in _received(log) if m.get("method") == "tools/call"]
    assert calls == ["later"]


def test_a_request_of_the_upstreams_between_calls_is_answered(
        home: Path, tmp_path: Path) -> None:
    """A ``ping`` the upstream sends while no call is in flight is answered then, not at
    the next call."""
    params, log = _proxy(home, tmp_path)

    async def scenario(s: ClientSession) -> None:
        result = await s.call_tool("test.up.pingme", {})
        assert result.isError is not True, result.content
        for _ in range(200):  # up to 20 s; answered about 0.5 s after the call
            if any(m.get("id") == "idle-ping" for m in _received(log)):
                break
            await anyio.sleep(0.1)

    _session(params, scenario)
    replies = [m for m in _received(log) if m.get("id") == "idle-ping"]
    assert replies == [{"jsonrpc": "2.0", "id": "idle-ping", "result": {}}]


def test_a_call_past_its_deadline_fails_and_the_upstream_is_told(tmp_path: Path) -> None:
    """The client itself (the proxy's deadline is a minute): a short deadline, a real
    upstream process; the next call on the same client still goes through."""
    from cradle_kg.integrations.upstream_stdio import REQUEST_TIMEOUT, stdio_upstream

    script, log = tmp_path / "chatty.py", tmp_path / "received.jsonl"
    script.write_text(UPSTREAM)
    with stdio_upstream([sys.executable, str(script), str(log)], 1 << 20) as client:
        client.initialize(30)
        started = time.monotonic()
        with pytest.raises(McpError) as caught:
            client.tool_call("mute", {}, None, 0.5)
        assert caught.value.error.code == REQUEST_TIMEOUT
        assert time.monotonic() - started < 20
        answered = client.tool_call("ask", {}, None, 30)
        assert answered.structuredContent is not None
        assert answered.structuredContent["up-ping"] == {"result": {}}
    received = _received(log)
    mute = next(m["id"] for m in received if m.get("params", {}).get("name") == "mute")
    cancelled = [m for m in received if m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for m in cancelled] == [mute]


def test_settle_reads_a_notice_written_after_the_last_answer(tmp_path: Path) -> None:
    """The client itself: between two calls in a run (before its idle reader starts), what
    the upstream wrote after the last answer is read by :meth:`settle`, which the proxy
    runs before each call's check of the tool list."""
    from cradle_kg.integrations.upstream_stdio import IDLE_GRACE, stdio_upstream

    script, log = tmp_path / "chatty.py", tmp_path / "received.jsonl"
    script.write_text(UPSTREAM)
    changed: list[float] = []
    with stdio_upstream([sys.executable, str(script), str(log)], 1 << 20,
                        lambda: changed.append(time.monotonic())) as client:
        client.initialize(30)
        client.tool_call("soon", {}, None, 30)
        time.sleep(IDLE_GRACE / 2)  # the notice is written 5 ms after the answer
        client.settle()
        assert changed, "the notice was not read"


def test_an_upstream_that_leaves_fails_the_waiting_call_at_once(tmp_path: Path) -> None:
    from cradle_kg.integrations.upstream_stdio import CONNECTION_CLOSED, stdio_upstream

    script = tmp_path / "leaves.py"
    script.write_text("import sys\nsys.stdin.buffer.readline()\n")  # reads one line, exits
    with stdio_upstream([sys.executable, str(script)], 1 << 20) as client:
        started = time.monotonic()
        with pytest.raises(McpError) as caught:
            client.tool_call("any", {}, None, 60)
        assert caught.value.error.code == CONNECTION_CLOSED
        assert time.monotonic() - started < 30  # not the deadline
        with pytest.raises(McpError):  # and every later call
            client.tool_call("any", {}, None, 60)


@pytest.mark.parametrize(("command", "said"), [
    (["/no/such/upstream"], "could not be started"),
    ([sys.executable, "-c", "pass"], "did not initialize: Connection closed"),
], ids=["not-found", "leaves-at-once"])
def test_an_upstream_that_cannot_start_is_one_line_exit_2(
        home: Path, tmp_path: Path, command: list[str], said: str) -> None:
    contracts = tmp_path / "c.yaml"
    contracts.write_text(CONTRACTS)
    done = cli("mcp", "proxy", "--home", str(home), "--agent", AGENT, "--contracts",
               str(contracts), "--", *command)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr


def test_an_upstream_that_does_not_read_fails_the_call_at_its_deadline(tmp_path: Path) -> None:
    """A request longer than the pipe holds, to an upstream that reads nothing: the write
    waits within the call's deadline, and the line cut short ends the session (no later
    line could be framed); the upstream is terminated when the client leaves."""
    from cradle_kg.integrations.upstream_stdio import (
        CONNECTION_CLOSED,
        REQUEST_TIMEOUT,
        stdio_upstream,
    )

    script = tmp_path / "deaf.py"
    script.write_text("import time\ntime.sleep(120)\n")
    with stdio_upstream([sys.executable, str(script)], 1 << 20) as client:
        started = time.monotonic()
        with pytest.raises(McpError) as caught:
            client.tool_call("any", {"text": "x" * (1 << 20)}, None, 0.5)
        assert caught.value.error.code == REQUEST_TIMEOUT
        assert time.monotonic() - started < 20
        with pytest.raises(McpError) as later:
            client.tool_call("any", {}, None, 5)
        assert later.value.error.code == CONNECTION_CLOSED
        process = client.process
    assert process.poll() is not None  # ended with its group
