"""An HTTP upstream restarted between two calls: its session is opened again.

Finding: **an upstream that restarted while no call was made lost the proxy's session for
good.** The streamable-HTTP upstream forgets its sessions when it restarts and answers a
request naming one ``404``; the proxy kept sending the old ``Mcp-Session-Id``, so every
call from then on — the upstream up and well — journaled its intent, failed ``HTTP 404``
and opened a human task, until someone restarted the proxy.

Now: a ``404`` to a request that names the session (the spec's "start a new session")
marks the upstream lost, as a refused connection does (``test_489``): that call is
reconciled as before, later calls are refused before anything is written while a new
session is opened in the background, and then served through it.

A real proxy process in front of a real streamable-HTTP upstream process, stopped and
started again on the same port between two calls.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from tests.integrations.conftest import mcp_home
from tests.integrations.test_mcp_proxy import CONTRACTS, _free_port, key, received, run
from tests.security.test_476_proxy_dead_upstream import PATIENCE
from tests.security.test_489_proxy_http_upstream_down import _refused, _start


def test_an_http_upstream_restarted_between_calls_is_served_through_a_new_session(
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
        processes.append(await anyio.to_thread.run_sync(_start, upstream_dir, port))
        # the call that finds the session gone: written and reconciled as before
        seen["finder"] = await s.call_tool("test.up.append", {"id": "n9", "text": "z"},
                                           meta=key("k-finder"))
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

    again = seen["again"]
    assert not again.isError, again.structuredContent
    assert [c["id"] for c in received(upstream_dir, "append")] == ["n1", "n2"]  # once each

    rt = Runtime(home)
    try:
        kinds = [e.kind for e in rt.journal.events()]
    finally:
        rt.close()
    assert kinds.count("action.intent") == 3, kinds  # n1, the finder, n2
