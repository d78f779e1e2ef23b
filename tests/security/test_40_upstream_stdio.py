"""An upstream that answers without end cannot exhaust the proxy's memory.

Finding: ``cradle-kg mcp proxy -- COMMAND`` read its upstream's stdout with the SDK's
``stdio_client``, which joins what it reads as ``buffer + chunk`` with no limit. An
upstream answering a ``tools/call`` with one line of 300 MB grew the proxy by as much (and
more: each read copies the whole buffer, so its CPU grew quadratically — the call did not
end within a minute and a half); an upstream writing without end took all the host's
memory. ``mcp serve``'s own stdin had been capped (``test_31``); the upstream's side was
not. The proxy now starts the upstream with its own transport
(:mod:`cradle_kg.integrations.upstream_stdio`), reading each line through the same capped
reader as ``mcp serve``'s stdin: a line past ``4 * max_output_bytes + max_bytes`` is
dropped as it arrives, and every call waiting on the upstream fails at once with a typed
error (the gateway journals a failed call) — the framing is kept and the next call goes
through. An upstream that writes without end fails the call at once as well, and is
terminated when the proxy leaves. A line that is not JSON, or not UTF-8, is an exception
on the session's read stream, as the SDK's reader sends one — where the SDK's reader
raised out of its task on bytes that are not UTF-8, and the proxy ended.

A real ``cradle-kg mcp proxy`` subprocess on pipes (raw JSON-RPC lines), in front of a
hostile upstream written here (a plain Python script speaking JSON-RPC lines); the proxy's
resident memory is read from ``/proc/<pid>/status``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.records import Permission
from cradle_kg.storage.opening import home_journal_target, verify_target

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")

ROOT = Path(__file__).resolve().parents[2]
#: the proxy may grow by this much while the upstream sends 300 MB
GROWTH_MB = 96
UPSTREAM = r'''
import json
import sys

out = sys.stdout.buffer


def send(obj):
    out.write(json.dumps(obj).encode() + b"\n")
    out.flush()


for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    rid, method = msg.get("id"), msg.get("method")
    if rid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
            {"name": n, "inputSchema": {"type": "object"}}
            for n in ("blast", "endless", "fine")]}})
    elif method == "tools/call" and msg["params"]["name"] in ("blast", "endless"):
        endless = msg["params"]["name"] == "endless"
        out.write(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"'
                  % rid)
        chunk = b"x" * (1 << 20)
        sent = 0
        while endless or sent < 300:  # 300 MB on one line, or no end at all
            out.write(chunk)
            sent += 1
        out.write(b'"}]}}\n')
        out.flush()
    elif method == "tools/call":
        out.write(b"not json\n" + b'{"jsonrpc": "2.0", "method": "\xff"}\n')  # then its answer
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": "{\"ok\": true}"}],
            "structuredContent": {"ok": True}, "isError": False}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}})
'''
CONTRACTS = "tools:\n" + "".join(
    f"  {n}:\n    side_effect: read_only\n    target: 'test:{n}'\n"
    for n in ("blast", "endless", "fine"))


class Proxy:
    """A ``cradle-kg mcp proxy`` on pipes, its answers read line by line in a thread."""

    def __init__(self, home: Path, tmp: Path) -> None:
        upstream = tmp / "hostile.py"
        upstream.write_text(UPSTREAM)
        contracts = tmp / "contracts.yaml"
        contracts.write_text(CONTRACTS)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
        self.stderr = (tmp / "proxy.stderr").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cradle_kg", "mcp", "proxy", "--home", str(home),
             "--agent", AGENT, "--contracts", str(contracts), "--prefix", "test.up.", "--",
             sys.executable, str(upstream)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, env=env, cwd=ROOT)
        self.lines: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "client", "version": "1"}})
        self.wait_for(1, timeout=60)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        stdout: IO[bytes] | None = self.proc.stdout
        assert stdout is not None
        for raw in stdout:
            with self.cond:
                self.lines.append(json.loads(raw))
                self.cond.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, rid: int, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    def answer(self, rid: int) -> dict[str, Any] | None:
        with self.cond:
            return next((m for m in self.lines if m.get("id") == rid), None)

    def wait_for(self, rid: int, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while (found := next((m for m in self.lines if m.get("id") == rid), None)) is None:
                left = deadline - time.monotonic()
                assert left > 0 and self.proc.poll() is None, \
                    f"no answer to {rid} (proxy exit {self.proc.poll()})"
                self.cond.wait(min(left, 0.5))
            return found

    def rss_mb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            line = next(x for x in fh if x.startswith("VmRSS"))
        return int(line.split()[1]) // 1024

    def call_watching_memory(self, rid: int, tool: str, timeout: float = 90
                             ) -> tuple[dict[str, Any], int]:
        """The answer to one call, and how much the proxy grew at most while it ran (the
        call refused past ``GROWTH_MB``: the test has failed, the host is spared)."""
        start = self.rss_mb()
        self.request(rid, "tools/call", {"name": tool, "arguments": {}})
        grown = 0
        deadline = time.monotonic() + timeout
        while (found := self.answer(rid)) is None:
            grown = max(grown, self.rss_mb() - start)
            assert grown < GROWTH_MB, f"the proxy grew by {grown} MB during one call"
            assert time.monotonic() < deadline, f"no answer to `{tool}` in {timeout} s"
            assert self.proc.poll() is None, f"the proxy died: {self.proc.returncode}"
            time.sleep(0.05)
        return found, grown

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9
        finally:
            self.stderr.close()


def _failed(answer: dict[str, Any]) -> str:
    """The text of a failed call's answer (a tool error, not a JSON-RPC one: the proxy's
    gateway answered it)."""
    assert "result" in answer and answer["result"].get("isError") is True, answer
    return " ".join(c.get("text", "") for c in answer["result"]["content"])


def test_an_upstream_answer_without_end_is_dropped_and_the_call_fails(
        home: Path, tmp_path: Path) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "permissions": (*config.permissions, Permission(
            subject=AGENT, action_type="test.*", resource_selector="test:*")),
        # the upstream's lines are held to 4 * 1 MiB + max_bytes (1 MiB): 5 MiB
        "input_limits": config.input_limits.model_copy(update={
            "max_output_bytes": 1024 * 1024})}))
    proxy = Proxy(home, tmp_path)
    try:
        blast, grown = proxy.call_watching_memory(2, "test.up.blast")
        assert "limit" in _failed(blast), blast
        assert grown < GROWTH_MB
        # the session goes on; lines that are not messages before the answer are skipped
        fine, _ = proxy.call_watching_memory(3, "test.up.fine")
        assert fine["result"].get("isError") is not True, fine
        assert fine["result"]["structuredContent"] == {"ok": True}, fine
        endless, grown = proxy.call_watching_memory(4, "test.up.endless", timeout=30)
        assert "limit" in _failed(endless), endless  # at once, not at the 60 s timeout
        assert grown < GROWTH_MB
    finally:
        code = proxy.close()  # the endless upstream is terminated as the proxy leaves
    err = (tmp_path / "proxy.stderr").read_text(encoding="utf-8", errors="replace")
    assert code == 0, err
    assert "Traceback" not in err, err
    with Runtime(home) as rt:
        observed = [e.payload["observation"] for e in rt.journal.events_of_kind(
            "action.observed")]
    assert [o["reported_ok"] for o in observed] == [False, True, False], observed
    assert verify_target(home_journal_target(home)).intact
