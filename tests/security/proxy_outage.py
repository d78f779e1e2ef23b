"""An upstream of ``cradle-kg mcp proxy`` that goes away and comes back: the real upstream
(``tests/integrations/upstream_server.py``) over stdio or streamable HTTP, killed or stopped
by the test, and what the proxy's calls during and after the outage must show. Shared by
``test_476``, ``test_489`` … ``test_491``."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.records import AuditEvent
from tests.integrations.conftest import mcp_home
from tests.integrations.test_mcp_proxy import CONTRACTS, UPSTREAM, _free_port, key, run

#: seconds a test waits at most for the proxy or an upstream to get somewhere (a bound on a
#: wait, not an assertion on how long it takes)
PATIENCE = 60.0


def proxied_home(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(home, the upstream's folder, the contracts file): a home whose agent may call
    ``test.*`` on ``test:*``, and the test contracts of ``test_mcp_proxy``."""
    home = mcp_home(tmp_path / "home")
    upstream_dir = tmp_path / "upstream"
    upstream_dir.mkdir()
    contracts = tmp_path / "c.yaml"
    contracts.write_text(CONTRACTS)
    return home, upstream_dir, contracts


def starts(upstream_dir: Path) -> list[tuple[str, int]]:
    """Each start of the stdio upstream: (``ok`` or why it refused, its pid)."""
    path = upstream_dir / "starts"
    lines = path.read_text().split() if path.exists() else []
    return [(lines[i], int(lines[i + 1])) for i in range(0, len(lines) - 1, 2)]


def gone(pid: int) -> bool:
    """The process is dead: gone, or a zombie its parent has not reaped *and can*. The
    leader of a process with threads (the upstream: the SDK's) is shown a zombie while its
    other threads are still exiting; until they are, its parent's ``waitpid`` does not
    return it and its stdout is still open, so the proxy rightly still sees it running
    (the CI of ``ec69e75``: the test called in that gap, 2 runs in 50 under load)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X") and threads == [str(pid)]


async def until(predicate: Any, what: str) -> None:
    ends = time.monotonic() + PATIENCE
    while not predicate():
        assert time.monotonic() < ends, f"never: {what}"
        await anyio.sleep(0.05)


def start_http(upstream_dir: Path, port: int, script: Path = UPSTREAM
               ) -> subprocess.Popen[bytes]:
    """The upstream (``script DIR PORT``) over streamable HTTP on ``port``, once it
    listens."""
    process = subprocess.Popen([sys.executable, str(script), str(upstream_dir), str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ends = time.monotonic() + PATIENCE
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
            return process
        assert time.monotonic() < ends, "the upstream never listened"
        time.sleep(0.05)


@dataclass
class HttpUpstream:
    """The upstream over HTTP on its port: stopped, and started again on the same port."""

    folder: Path
    port: int = field(default_factory=_free_port)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    #: the upstream's script (``script DIR PORT``)
    script: Path = UPSTREAM

    def stop(self) -> None:
        self.processes[-1].terminate()
        self.processes[-1].wait(timeout=30)

    async def start_again(self) -> None:
        self.processes.append(await anyio.to_thread.run_sync(start_http, self.folder,
                                                             self.port, self.script))


def through_http_proxy(home: Path, contracts: Path, upstream_dir: Path,
                       scenario: Callable[[ClientSession, HttpUpstream], Awaitable[None]],
                       script: Path = UPSTREAM) -> None:
    """``scenario`` as a client of ``mcp proxy --upstream URL`` in front of the HTTP
    upstream ``script`` (every upstream process it started stopped at the end)."""
    up = HttpUpstream(upstream_dir, script=script)
    up.processes.append(start_http(upstream_dir, up.port, script))
    try:
        run(["-m", "cradle_kg", "mcp", "proxy", "--home", str(home), "--agent", AGENT,
             "--contracts", str(contracts), "--prefix", "test.up.",
             "--upstream", f"http://127.0.0.1:{up.port}/mcp"], lambda s: scenario(s, up))
    finally:
        for process in up.processes:
            process.terminate()
            process.wait(timeout=30)


def unavailable(result: Any) -> bool:
    """A call refused because its upstream cannot be reached now."""
    body = result.structuredContent or {}
    return bool(result.isError and body.get("reason_codes") == ["tool_unavailable"])


def assert_refused_retryable(results: Sequence[Any]) -> None:
    """Each call of the outage refused before anything was written, retryable."""
    for r in results:
        body = r.structuredContent
        assert body["status"] == "refused", body
        assert body["reason_codes"] == ["tool_unavailable"], body
        assert body["retryable"] is True and body["retry_after"] > 0, body


async def append_once_served(s: ClientSession, record: str, text: str, idem: str) -> Any:
    """``test.up.append`` called until the proxy serves it again (refused meanwhile)."""
    again: Any = None
    ends = time.monotonic() + PATIENCE
    while again is None or unavailable(again):
        assert time.monotonic() < ends, "never served again"
        await anyio.sleep(0.05)
        again = await s.call_tool("test.up.append", {"id": record, "text": text},
                                  meta=key(idem))
    return again


def journaled(home: Path) -> list[AuditEvent]:
    """Every event of the home's journal, read after the proxy stopped."""
    with Runtime(home) as rt:
        return list(rt.journal.events())
