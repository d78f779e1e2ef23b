"""A JSON-RPC peer on a subprocess's pipes (``mcp serve``, ``mcp proxy``), for the attacks.

Lines are written raw (an attack sends what it likes) and the answers are read, one JSON
object a line, by a thread; :meth:`JsonLinesProcess.wait_for` takes the first that matches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
Match = Callable[[dict[str, Any]], bool]


class JsonLinesProcess:
    """``python -m cradle_kg ARGV`` on pipes, initialized as an MCP client would."""

    def __init__(self, argv: Sequence[str], *, stderr: Any = subprocess.PIPE,
                 client: str = "attacker") -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cradle_kg", *argv], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=ROOT)
        self.lines: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": client, "version": "1"}})
        self.wait_for(lambda m: m.get("id") == 1)
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def _read(self) -> None:
        stdout: IO[bytes] | None = self.proc.stdout
        assert stdout is not None
        for raw in stdout:
            with self.cond:
                self.lines.append(json.loads(raw))
                self.cond.notify_all()

    def send(self, data: bytes, *, end: bool = True) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + (b"\n" if end else b""))
        self.proc.stdin.flush()

    def request(self, rid: int, method: str, params: dict[str, Any]) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                              "params": params}).encode())

    def answer(self, rid: int) -> dict[str, Any] | None:
        """The answer to ``rid`` if it came (left in place)."""
        with self.cond:
            return next((m for m in self.lines if m.get("id") == rid), None)

    def wait_for(self, match: Match, timeout: float = 60) -> dict[str, Any]:
        """The first line that matches (taken), within ``timeout``; the process alive."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = next((m for m in self.lines if match(m)), None)
                if found is not None:
                    self.lines.remove(found)
                    return found
                left = deadline - time.monotonic()
                assert left > 0 and self.proc.poll() is None, \
                    f"no answer (exit {self.proc.poll()}); seen {self.lines}"
                self.cond.wait(min(left, 0.5))

    def call_watching_memory(self, rid: int, tool: str, *, limit_mb: int, timeout: float = 90
                             ) -> tuple[dict[str, Any], int]:
        """The answer to one ``tools/call``, and how much the process grew at most while it
        ran (the call refused past ``limit_mb``: the test has failed, the host is spared)."""
        start = self.rss_mb()
        self.request(rid, "tools/call", {"name": tool, "arguments": {}})
        grown = 0
        deadline = time.monotonic() + timeout
        while (found := self.answer(rid)) is None:
            assert self.proc.poll() is None, f"the process died: {self.proc.returncode}"
            grown = max(grown, self.rss_mb() - start)
            assert grown < limit_mb, f"the process grew by {grown} MB during one call"
            assert time.monotonic() < deadline, f"no answer to `{tool}` in {timeout} s"
            time.sleep(0.05)
        return found, grown

    def rss_mb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            line = next(x for x in fh if x.startswith("VmRSS"))
        return int(line.split()[1]) // 1024

    def stop(self) -> int:
        """Close its stdin and wait for it (killed after 30 s); its exit code."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9


def failed_text(answer: dict[str, Any]) -> str:
    """The text of a failed call's answer (a tool error, not a JSON-RPC one: the gateway
    of ``mcp serve`` or ``mcp proxy`` answered it)."""
    assert "result" in answer and answer["result"].get("isError") is True, answer
    return " ".join(c.get("text", "") for c in answer["result"]["content"])


def capped_proxy_home(home: Path) -> None:
    """``home`` as the proxy tests run it: the agent may call ``test.*`` on ``test:*``, and
    the upstream's answers are held to ``4 * 1 MiB + max_bytes (1 MiB)``: 5 MiB."""
    from cradle_kg.config import load_config, save_config
    from cradle_kg.demo.scenario import AGENT
    from cradle_kg.records import Permission

    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "permissions": (*config.permissions, Permission(
            subject=AGENT, action_type="test.*", resource_selector="test:*")),
        "input_limits": config.input_limits.model_copy(update={
            "max_output_bytes": 1024 * 1024})}))


_UPSTREAM_HEAD = r'''
import json
import sys

PRELUDE
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
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS_LISTED}})
'''
_UPSTREAM_TAIL = '''    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}})
'''


def upstream_script(listed: str, calls: str, *, prelude: str = "") -> str:
    """The source of a fake upstream MCP server on stdio, for ``mcp proxy -- python FILE``:
    it answers ``initialize``, lists ``listed`` (a Python expression of the ``tools/list``
    entries), answers ``tools/call`` with ``calls`` (its ``elif`` branches, Python source
    indented four spaces; ``send``, ``out``, ``msg``, ``rid``, ``method`` are in scope) and
    anything else with a JSON-RPC error. ``prelude``: lines run first (``TOOLS = ...``)."""
    return (_UPSTREAM_HEAD.replace("PRELUDE\n", prelude).replace("TOOLS_LISTED", listed)
            + calls + _UPSTREAM_TAIL)


class UpstreamProxy(JsonLinesProcess):
    """A ``cradle-kg mcp proxy`` on pipes in front of the fake upstream ``script`` (its
    ``tools``, read-only contracts on ``test:<tool>``, offered as ``test.up.<tool>``); its
    stderr goes to ``tmp/proxy.stderr``."""

    def __init__(self, home: Path, tmp: Path, script: str, tools: Sequence[str]) -> None:
        from cradle_kg.demo.scenario import AGENT

        upstream = tmp / "hostile.py"
        upstream.write_text(script)
        contracts = tmp / "contracts.yaml"
        contracts.write_text("tools:\n" + "".join(
            f"  {n}:\n    side_effect: read_only\n    target: 'test:{n}'\n" for n in tools))
        self.stderr = (tmp / "proxy.stderr").open("wb")
        super().__init__(["mcp", "proxy", "--home", str(home), "--agent", AGENT,
                          "--contracts", str(contracts), "--prefix", "test.up.", "--",
                          sys.executable, str(upstream)], stderr=self.stderr, client="client")

    def call(self, rid: int, tool: str, timeout: float) -> dict[str, Any]:
        self.request(rid, "tools/call", {"name": tool, "arguments": {}})
        return self.wait_for(lambda m: m.get("id") == rid, timeout=timeout)

    def close(self) -> int:
        try:
            return self.stop()
        finally:
            self.stderr.close()


def observed_after(code: int, home: Path, tmp: Path) -> list[bool]:
    """Once an :class:`UpstreamProxy` stopped with ``code``: it exited 0 with no traceback
    on its stderr and left the journal intact; each journaled observation's ``reported_ok``."""
    from cradle_kg import Runtime
    from cradle_kg.storage.opening import home_journal_target, verify_target

    err = (tmp / "proxy.stderr").read_text(encoding="utf-8", errors="replace")
    assert code == 0, err
    assert "Traceback" not in err, err
    assert verify_target(home_journal_target(home)).intact
    with Runtime(home) as rt:
        return [bool(e.payload["observation"]["reported_ok"])
                for e in rt.journal.events_of_kind("action.observed")]
