"""An HTTP upstream that cannot be reached: refused before any intent, and reached again.

Finding: **``mcp proxy --upstream URL`` did not watch its upstream.** With the upstream
stopped (connection refused), every call still passed gate 1, journaled its intent, failed
(``ConnectError``) and — gate 2 reading nothing either — opened a human task: one per call
of one outage, for calls that provably never left the proxy (what ``test_476`` fixed for a
stdio upstream).

Now: a call that finds the upstream unreachable (the connection refused, reset, closed: not
an application error) marks it down. That call is reconciled as before (its intent is
written; its key's next call answers its outcome, never a second call); every later call
is refused before anything is journaled — ``tool_unavailable``, retryable with a
``retry_after`` — while a background probe (a new session: initialize, list the tools,
compare their pins; at once, then backing off) tries the upstream; reached again, it is
served through the new session.

A real proxy process in front of a real streamable-HTTP upstream process, stopped and
started again on the same port.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from tests.integrations.conftest import mcp_home
from tests.integrations.test_mcp_proxy import CONTRACTS, UPSTREAM, _free_port, key, received, run
from tests.security.test_476_proxy_dead_upstream import PATIENCE


def _start(upstream_dir: Path, port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, str(UPSTREAM), str(upstream_dir), str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ends = time.monotonic() + PATIENCE
    while True:  # until it listens
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
            return process
        assert time.monotonic() < ends, "the upstream never listened"
        time.sleep(0.05)


def _refused(result: Any) -> bool:
    body = result.structuredContent or {}
    return bool(result.isError and body.get("reason_codes") == ["tool_unavailable"])


def test_an_unreachable_http_upstream_is_refused_before_any_intent_and_reached_again(
        tmp_path: Path) -> None:
    home = mcp_home(tmp_path / "home")
    upstream_dir = tmp_path / "upstream"
    upstream_dir.mkdir()
    contracts = tmp_path / "c.yaml"
    contracts.write_text(CONTRACTS)
    port = _free_port()
    processes = [_start(upstream_dir, port)]
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession) -> None:
        first = await s.call_tool("test.up.append", {"id": "n1", "text": "a"}, meta=key("k1"))
        assert not first.isError, first
        processes[0].terminate()
        processes[0].wait(timeout=30)
        # the call that finds it unreachable: written and reconciled as before
        seen["finder"] = await s.call_tool("test.up.append", {"id": "n9", "text": "z"},
                                           meta=key("k-finder"))
        seen["outage"] = [await s.call_tool("test.up.append", {"id": "n2", "text": "b"},
                                            meta=key(f"k-out-{i}")) for i in range(3)]
        processes.append(await anyio.to_thread.run_sync(_start, upstream_dir, port))
        again: Any = None
        ends = time.monotonic() + PATIENCE
        while again is None or _refused(again):
            assert time.monotonic() < ends, "never served again"
            await anyio.sleep(0.05)
            again = await s.call_tool("test.up.append", {"id": "n2", "text": "b"},
                                      meta=key("k2"))
        seen["again"] = again

    try:
        run(["-m", "cradle_kg", "mcp", "proxy", "--home", str(home), "--agent", AGENT,
             "--contracts", str(contracts), "--prefix", "test.up.",
             "--upstream", f"http://127.0.0.1:{port}/mcp"], scenario)
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)

    assert not _refused(seen["finder"]), seen["finder"]
    for r in seen["outage"]:  # refused, retryable: nothing written (checked below)
        body = r.structuredContent
        assert body["status"] == "refused", body
        assert body["reason_codes"] == ["tool_unavailable"], body
        assert body["retryable"] is True and body["retry_after"] > 0, body
    again = seen["again"]
    assert not again.isError, again.structuredContent
    assert [c["id"] for c in received(upstream_dir, "append")] == ["n1", "n2"]  # once each

    rt = Runtime(home)
    try:
        events = list(rt.journal.events())
    finally:
        rt.close()
    kinds = [e.kind for e in events]
    assert kinds.count("action.intent") == 3, kinds  # n1, the finder, n2: none for the outage
    assert not [e for e in events if "k-out-" in str(e.payload)]  # nothing of them written
