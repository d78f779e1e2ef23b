"""An HTTP upstream that stops answering is down, as one that refuses connections.

Finding: **a hung HTTP upstream (it accepts connections and never answers: stopped,
wedged, its network black-holed) was not seen down.** ``test_489`` marks the session lost
when a request finds the upstream unreachable — refused, reset or closed — but a request
that *timed out* did not: each later call passed gate 1, journaled its intent, waited
``UPSTREAM_TIMEOUT`` (and the gateway's retries, and gate 2's read, as long again each),
and opened a human task ("the state of the target is unknown") — one per call of one
outage, each holding a worker thread for minutes, as ``test_489`` was before its fix.

Now: a request to an HTTP upstream that times out marks its session lost, as a refused
connection does. That call is settled as before (its outcome is unknown: the lookup asks,
``test_532``; no trace → a human task); later calls are refused before anything is
written (``tool_unavailable``, retryable) while the proxy opens a new session in the
background — initialize and list within the deadline — and serves through it once the
upstream answers again. A slow call on a live upstream costs a reconnect, not an outage.

A real HTTP upstream process (``tests/integrations/upstream_server.py``) stopped with
SIGSTOP and continued with SIGCONT; the proxy in process, its deadline 0.5 s.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from cradle_kg import Runtime
from cradle_kg.errors import ToolUnavailableError
from cradle_kg.integrations import proxy
from cradle_kg.integrations.contracts import load_contracts
from cradle_kg.integrations.proxy import connect, register
from cradle_kg.records import OutcomeStatus
from tests.conftest import make_config, proposal
from tests.integrations.test_mcp_proxy import CONTRACTS, received
from tests.security.proxy_outage import PATIENCE, HttpUpstream, start_http


def submit(rt: Runtime, pid: str, record: str) -> Any:
    """``append`` of ``record`` under key ``k-<pid>``: its outcome, or the refusal."""
    p = proposal(pid, "test.up.append", {"id": record, "text": "t-" + record},
                 agent="agent:tester", target="test:" + record,
                 action={"idempotency_key": "k-" + pid})
    try:
        return rt.submit(p)
    except ToolUnavailableError as exc:
        return exc


def test_a_hung_http_upstream_is_refused_before_any_intent_and_reached_again(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proxy, "UPSTREAM_TIMEOUT", 0.5)
    folder = tmp_path / "upstream"
    folder.mkdir()
    (tmp_path / "c.yaml").write_text(CONTRACTS)
    up = HttpUpstream(folder)
    up.processes.append(start_http(folder, up.port))
    rt = Runtime(home, config=make_config())
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with connect(None, f"http://127.0.0.1:{up.port}/mcp") as (upstream, tools):
            register(rt, upstream, tools, load_contracts(tmp_path / "c.yaml"),
                     prefix="test.up.", allow_undeclared_read=False)
            first = await anyio.to_thread.run_sync(submit, rt, "p1", "n1")
            assert first.status is OutcomeStatus.EXECUTED, first.reasons
            up.processes[-1].send_signal(signal.SIGSTOP)  # it answers nothing from now
            try:
                seen["hung"] = await anyio.to_thread.run_sync(submit, rt, "p2", "n2")
                seen["outage"] = [await anyio.to_thread.run_sync(submit, rt, f"p{i}", "n3")
                                  for i in (3, 4, 5)]
            finally:
                up.processes[-1].send_signal(signal.SIGCONT)
            ends = time.monotonic() + PATIENCE
            again: Any = None
            while again is None or isinstance(again, ToolUnavailableError):
                assert time.monotonic() < ends, "never served again"
                await anyio.sleep(0.05)
                again = await anyio.to_thread.run_sync(submit, rt, "p6", "n6")
            seen["again"] = again

    try:
        anyio.run(main)
        kinds = [e.kind for e in rt.journal.events()]
        payloads = " ".join(str(e.payload) for e in rt.journal.events())
    finally:
        rt.close()
        for process in up.processes:
            process.send_signal(signal.SIGCONT)
            process.terminate()
            process.wait(timeout=30)
    assert seen["hung"].status is OutcomeStatus.FAILED, seen["hung"].reasons  # unknown: a task
    for refused in seen["outage"]:  # refused before anything was written, retryable
        assert isinstance(refused, ToolUnavailableError), refused
        assert refused.retry_after > 0
    assert "k-p3" not in payloads and "k-p5" not in payloads
    assert kinds.count("human_task.opened") <= 1, kinds  # the hung call's, at most
    assert seen["again"].status is OutcomeStatus.EXECUTED, seen["again"].reasons
    assert [c["id"] for c in received(folder, "append")].count("n6") == 1
