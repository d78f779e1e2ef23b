"""``cradle-kg mcp proxy`` in front of a real MCP server of ours (``upstream_server.py``).

The proxy runs as a real subprocess, driven by the official MCP client; it starts the
upstream itself (a second subprocess). The upstream logs every write call it receives,
so "never reached" and "reached once" are read from its own log. A contracts file the
proxy refuses at start is read by the command run in this process (``run_cli``): what it
says and its exit code are the point, and it never reaches the upstream.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
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

from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.integrations.contracts import load_contracts
from cradle_kg.records import Permission
from tests.inprocess import run_cli

from .conftest import ROOT, cli, env
from .test_mcp_stdio import _approve_when_pending

Scenario = Callable[[ClientSession], Awaitable[None]]
UPSTREAM = Path(__file__).parent / "upstream_server.py"
LIMIT = timedelta(seconds=120)
CONTRACTS = """\
tools:
  append:
    side_effect: reversible
    idempotency: keyed
    key_argument: key
    target: "test:{id}"
    verify: {tool: read, arguments: {id: "{id}"}, expect: {text: "{text}"}}
  append_lie:
    side_effect: reversible
    idempotency: keyed
    key_argument: key
    target: "test:{id}"
    verify: {tool: read, arguments: {id: "{id}"}, expect: {text: "{text}"}}
  wipe:
    side_effect: reversible
    idempotency: keyed
    target: "danger:{id}"
    verify: {tool: read, arguments: {id: "{id}"}}
  read:
    side_effect: read_only
    target: "test:{id}"
"""


@pytest.fixture
def upstream_dir(tmp_path: Path) -> Path:
    path = tmp_path / "upstream"
    path.mkdir()
    return path


@pytest.fixture
def contracts(tmp_path: Path) -> Path:
    path = tmp_path / "contracts.yaml"
    path.write_text(CONTRACTS)
    return path


def proxy_args(home: Path, contracts: Path, upstream_dir: Path, *extra: str) -> list[str]:
    return ["-m", "cradle_kg", "mcp", "proxy", "--home", str(home), "--agent", AGENT,
            "--contracts", str(contracts), "--prefix", "test.up.", *extra, "--",
            sys.executable, str(UPSTREAM), str(upstream_dir)]


def run(args: list[str], scenario: Scenario, extra_env: dict[str, str] | None = None) -> None:
    params = StdioServerParameters(command=sys.executable, args=args,
                                   env={**env(), **(extra_env or {})}, cwd=ROOT)

    async def main() -> None:
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write, read_timeout_seconds=LIMIT) as s:
            await s.initialize()
            await scenario(s)

    anyio.run(main)


def received(upstream_dir: Path, tool: str | None = None) -> list[dict[str, Any]]:
    path = upstream_dir / "calls.jsonl"
    calls = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    return [c for c in calls if tool is None or c["tool"] == tool]


def key(k: str) -> dict[str, Any]:
    return {"cradle-kg/idempotency_key": k}


def test_declared_tools_only_and_a_denied_call_never_reaches_the_upstream(
        home: Path, contracts: Path, upstream_dir: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        assert set(listed) == {"test.up.append", "test.up.append_lie", "test.up.wipe",
                               "test.up.read"}  # `peek` has no contract: not served
        assert listed["test.up.read"].annotations.readOnlyHint is True
        assert listed["test.up.append"].annotations.readOnlyHint is False
        assert "id" in listed["test.up.append"].inputSchema["properties"]  # the upstream's
        denied = await s.call_tool("test.up.wipe", {"id": "n1"})
        assert denied.isError
        assert denied.structuredContent["status"] == "denied"
        assert denied.structuredContent["reasons"]

    run(proxy_args(home, contracts, upstream_dir), scenario)
    assert received(upstream_dir) == []


def test_an_allowed_call_reaches_the_upstream_once_and_is_verified(
        home: Path, contracts: Path, upstream_dir: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        done = await s.call_tool("test.up.append", {"id": "n1", "text": "hello"}, meta=key("k1"))
        assert not done.isError, done.content
        assert done.structuredContent == {"id": "n1", "text": "hello"}
        again = await s.call_tool("test.up.append", {"id": "n1", "text": "hello"},
                                  meta=key("k1"))
        assert not again.isError
        assert again.meta["cradle-kg/replayed"] is True
        read = await s.call_tool("test.up.read", {"id": "n1"})
        assert read.structuredContent == {"id": "n1", "text": "hello"}

    run(proxy_args(home, contracts, upstream_dir), scenario)
    calls = received(upstream_dir, "append")
    assert len(calls) == 1
    assert calls[0]["key"]  # the idempotency key travelled to the upstream


def test_concurrent_calls_share_the_upstream_session_without_crossing(
        home: Path, contracts: Path, upstream_dir: Path) -> None:
    """Several calls in flight at once on one client session: each is its own governed
    call over the one upstream session — each reaches the upstream once, each answer is
    its own (no response crosses to another call), a replay in the same burst is a replay."""
    n = 8

    async def scenario(s: ClientSession) -> None:
        written: dict[int, Any] = {}
        read: dict[int, Any] = {}

        async def write(i: int) -> None:
            written[i] = await s.call_tool("test.up.append", {"id": f"c{i}", "text": f"t{i}"},
                                           meta=key(f"ck{i}"))

        async def read_back(i: int) -> None:
            read[i] = await s.call_tool("test.up.read", {"id": f"c{i}"})

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(write, i)
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(read_back, i)
                tg.start_soon(read_back, i + n)  # nobody wrote these: the upstream's error
            tg.start_soon(write, 0)  # the same key again, in the burst: replayed
        for i in range(n):
            assert read[i].structuredContent == {"id": f"c{i}", "text": f"t{i}"}, i
            assert read[i + n].isError, i + n
        for i in range(1, n):
            assert written[i].structuredContent == {"id": f"c{i}", "text": f"t{i}"}, i
            assert written[i].structuredContent is not None
        assert written[0].meta["cradle-kg/replayed"] is True

    run(proxy_args(home, contracts, upstream_dir), scenario)
    calls = received(upstream_dir, "append")
    assert sorted(c["id"] for c in calls) == sorted(f"c{i}" for i in range(n))
    assert len({c["key"] for c in calls}) == n


def test_a_lying_upstream_is_verification_failed(
        home: Path, contracts: Path, upstream_dir: Path) -> None:
    async def scenario(s: ClientSession) -> None:
        lie = await s.call_tool("test.up.append_lie", {"id": "n2", "text": "x"})
        assert lie.isError
        assert lie.structuredContent["status"] == "verification_failed"
        assert "not confirmed" in lie.content[0].text

    run(proxy_args(home, contracts, upstream_dir), scenario)
    assert len(received(upstream_dir, "append_lie")) == 1


@pytest.mark.slow
def test_undeclared_tools_are_read_only_with_the_flag(
        home: Path, contracts: Path, upstream_dir: Path) -> None:
    config = load_config(home / "config.json")  # an undeclared read acts on `tool:<id>`
    save_config(home / "config.json", config.model_copy(update={"permissions": (
        *config.permissions, Permission(subject=AGENT, action_type="test.up.peek",
                                        resource_selector="tool:test.up.peek"))}))

    async def scenario(s: ClientSession) -> None:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        assert listed["test.up.peek"].annotations.readOnlyHint is True
        peek = await s.call_tool("test.up.peek", {})
        assert not peek.isError, peek.content
        assert peek.structuredContent == {"count": 0}

    run(proxy_args(home, contracts, upstream_dir, "--allow-undeclared-read"), scenario)


@pytest.mark.parametrize(("text", "line", "needle"), [
    ("tools:\n  append:\n    side_effect: sometimes\n", 3, "side_effect"),
    ("tools:\n  append:\n    side_effect: reversible\n    target: 'test:{id}'\n", 2,
     "needs `verify`"),
    ("tools: [\n", 2, "not valid yaml"),
])
def test_a_malformed_contracts_file_is_one_line_exit_2(
        home: Path, tmp_path: Path, upstream_dir: Path, text: str, line: int,
        needle: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    done = run_cli(*proxy_args(home, bad, upstream_dir)[2:])
    assert done.returncode == 2, done.stderr
    first = done.stderr.strip().splitlines()[0]
    assert f"bad.yaml:{line}:" in first and needle in first.lower(), done.stderr
    assert received(upstream_dir) == []


@pytest.mark.slow
def test_undeclared_upstream_names_in_the_contracts_are_refused(
        home: Path, tmp_path: Path, upstream_dir: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("tools:\n  nosuch:\n    side_effect: read_only\n")
    done = run_cli(*proxy_args(home, bad, upstream_dir)[2:])
    assert done.returncode == 2, done.stderr
    assert "`nosuch`" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("point", ["after_intent", "after_call", "before_verification"])
def test_a_crash_between_intent_and_call_never_calls_the_upstream_twice(
        home: Path, contracts: Path, upstream_dir: Path, point: str) -> None:
    args = proxy_args(home, contracts, upstream_dir)

    async def crashing(s: ClientSession) -> None:
        with pytest.raises(Exception):  # noqa: B017 - the proxy dies mid-call
            await s.call_tool("test.up.append", {"id": "c1", "text": "once"},
                              read_timeout_seconds=timedelta(seconds=60), meta=key("crash-1"))

    with contextlib.suppress(Exception):  # the client notices the dead server its own way
        run(args, crashing, {"CRADLE_CRASH_AT": point})
    before = len(received(upstream_dir, "append"))
    assert before == (0 if point == "after_intent" else 1)

    async def restarted(s: ClientSession) -> None:
        # recovery ran at start: the effect happened exactly once
        again = await s.call_tool("test.up.append", {"id": "c1", "text": "once"},
                                  meta=key("crash-1"))
        assert not again.isError, again.content
        assert again.meta["cradle-kg/replayed"] is True  # the recovered outcome, not a call
        assert again.structuredContent == {"id": "c1", "text": "once"}
        read = await s.call_tool("test.up.read", {"id": "c1"})
        assert read.structuredContent == {"id": "c1", "text": "once"}

    run(args, restarted)
    run(args, restarted)
    calls = received(upstream_dir, "append")
    assert len(calls) == 1, calls


@pytest.mark.slow
def test_an_approval_holds_for_an_upstream_tool(
        home: Path, tmp_path: Path, upstream_dir: Path) -> None:
    """An irreversible upstream tool waits for an approver; the approver decides from the
    CLI (another process, which cannot reach the upstream); the proxy then runs it once."""
    contracts = tmp_path / "irreversible.yaml"
    contracts.write_text(CONTRACTS.replace("  append:\n    side_effect: reversible",
                                           "  append:\n    side_effect: irreversible"))

    async def scenario(s: ClientSession) -> None:
        pending = await s.call_tool("test.up.append", {"id": "a1", "text": "ok"},
                                    meta=key("approve-1"))
        assert pending.structuredContent["status"] == "awaiting_approval", pending.content
        assert received(upstream_dir, "append") == []
        out = cli("approvals", "approve", pending.structuredContent["approval_id"], "--as",
                  APPROVER, "--once", "--home", str(home),
                  extra_env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
        assert out.returncode == 0, out.stderr
        final = await s.call_tool("test.up.append", {"id": "a1", "text": "ok"},
                                  meta=key("approve-1"))
        assert not final.isError, final.content
        assert final.structuredContent == {"id": "a1", "text": "ok"}

    run(proxy_args(home, contracts, upstream_dir), scenario)
    assert len(received(upstream_dir, "append")) == 1


@pytest.mark.slow
def test_an_approval_wait_ends_with_the_upstream_call(
        home: Path, tmp_path: Path, upstream_dir: Path) -> None:
    """With ``--approval-wait``, the proxy itself goes on once the approver decided."""
    contracts = tmp_path / "irreversible.yaml"
    contracts.write_text(CONTRACTS.replace("  append:\n    side_effect: reversible",
                                           "  append:\n    side_effect: irreversible"))
    approved: list[str] = []

    async def scenario(s: ClientSession) -> None:
        approver = threading.Thread(target=_approve_when_pending, args=(home, approved))
        approver.start()
        final = await s.call_tool("test.up.append", {"id": "w1", "text": "ok"},
                                  progress_callback=_ignore)
        await anyio.to_thread.run_sync(approver.join)
        assert not final.isError, final.content
        assert final.structuredContent == {"id": "w1", "text": "ok"}

    run(proxy_args(home, contracts, upstream_dir, "--approval-wait", "90"), scenario)
    assert approved, "the approver never saw a pending approval"
    assert len(received(upstream_dir, "append")) == 1


async def _ignore(progress: float, total: float | None, message: str | None) -> None:
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_a_streamable_http_upstream(home: Path, contracts: Path, upstream_dir: Path) -> None:
    port = _free_port()
    upstream = subprocess.Popen([sys.executable, str(UPSTREAM), str(upstream_dir), str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):  # until it listens (or the test times out)
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                break
            time.sleep(0.05)

        async def scenario(s: ClientSession) -> None:
            done = await s.call_tool("test.up.append", {"id": "h1", "text": "web"})
            assert not done.isError, done.content
            denied = await s.call_tool("test.up.wipe", {"id": "h1"})
            assert denied.structuredContent["status"] == "denied"

        run(["-m", "cradle_kg", "mcp", "proxy", "--home", str(home), "--agent", AGENT,
             "--contracts", str(contracts), "--prefix", "test.up.",
             "--upstream", f"http://127.0.0.1:{port}/mcp"], scenario)
    finally:
        upstream.terminate()
        upstream.wait(timeout=30)
    assert [c["tool"] for c in received(upstream_dir)] == ["append"]


def test_a_template_naming_no_upstream_argument_is_refused_at_start(
        home: Path, tmp_path: Path, upstream_dir: Path) -> None:
    bad = tmp_path / "c.yaml"
    # the read asked about `{nope}` too: its identity names the target's argument (test_475)
    bad.write_text(CONTRACTS.replace('target: "danger:{id}"', 'target: "danger:{nope}"')
                   .replace('verify: {tool: read, arguments: {id: "{id}"}}\n',
                            'verify: {tool: read, arguments: {id: "{nope}"}}\n'))
    done = run_cli(*proxy_args(home, bad, upstream_dir)[2:])
    assert done.returncode == 2, done.stderr
    assert "`{nope}` is not an argument" in done.stderr


def test_the_example_contracts_load() -> None:
    loaded = load_contracts(ROOT / "examples" / "notes_contracts.yaml")
    assert set(loaded.tools) == {"append", "read"}


def test_an_undeclared_write_is_not_served_as_a_read(home: Path, tmp_path: Path,
                                                     upstream_dir: Path) -> None:
    """`--allow-undeclared-read` serves only what the upstream annotates as a read: its
    unannotated `wipe` is not served, so an agent with a read grant cannot delete (found by
    the gateway review: it was served with `readOnlyHint` and governed as a read)."""
    contracts = tmp_path / "c.yaml"
    contracts.write_text("tools:\n  read:\n    side_effect: read_only\n    target: 'test:{id}'\n")
    (upstream_dir / "notes.json").write_text(json.dumps({"n1": "keep me"}))
    config = load_config(home / "config.json")  # reads of undeclared tools: `tool:<id>`
    save_config(home / "config.json", config.model_copy(update={"permissions": (
        *config.permissions, Permission(subject=AGENT, action_type="test.up.*",
                                        resource_selector="tool:*"))}))

    async def scenario(s: ClientSession) -> None:
        listed = {t.name for t in (await s.list_tools()).tools}
        if "test.up.wipe" in listed:
            await s.call_tool("test.up.wipe", {"id": "n1"})

    run(proxy_args(home, contracts, upstream_dir, "--allow-undeclared-read"), scenario)
    assert received(upstream_dir, "wipe") == [], "a destructive tool ran as a governed read"
    assert json.loads((upstream_dir / "notes.json").read_text()) == {"n1": "keep me"}
