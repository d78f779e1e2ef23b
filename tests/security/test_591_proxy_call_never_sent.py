"""A call whose write to a stdio upstream fails before one byte of it left the proxy.

Finding: **a call the upstream provably never received was an unknown outcome, and a
human task.** The upstream gone, and the proxy not knowing it yet (a killed process whose
threads are still exiting is still running to ``waitpid``, its stdout not yet at its end;
here: an upstream that closed its input and runs on), a call passed the ``ready`` check
(``tests/security/test_476``), journaled its intent, and its write to the upstream's stdin
failed with ``EPIPE`` before a single byte was written. The runtime recorded what it
records of any exception: called again twice under the key, its lookup asked, then
``failed``, "the state of the target is unknown", a human task — for a call that provably
reached nothing (the CI flake of ``test_490``).

Now: the stdio client marks the error of a request not one byte of which was written (the
session closed before it, or the first write of its line failed), and the proxied tool
raises the proxy's typed refusal ``upstream_not_reached``
(:class:`cradle_kg.ToolRefused`): ``failed``, final for its key — not called again, no
lookup, no human task — and the same key answers the recorded refusal without calling
anything (a new key calls again, once the upstream is back). The upstream is taken as gone
at that write: the next call is refused before its intent (``tool_unavailable``) and the
upstream is started again. Strict: a request that was written — the upstream read it, then
left without an answer — stays an unknown outcome; and the call made again under its key
after it (the retry, on the closed session) is not honoured as a refusal
(``test_593``): the first attempt may have written.

A real proxy process in front of a real upstream process (``deaf_upstream.py``, which
closes its stdin and runs on, so that the write fails while the process lives).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession

from tests.integrations.test_mcp_proxy import key, received, run
from tests.security.proxy_outage import (
    append_once_served,
    assert_refused_retryable,
    journaled,
    proxied_home,
    starts,
)

DEAF = Path(__file__).with_name("deaf_upstream.py")
CONTRACTS = """\
tools:
  append:
    side_effect: reversible
    idempotency: keyed
    key_argument: key
    target: "test:{id}"
    verify: {tool: read, arguments: {id: "{id}"}, expect: {text: "{text}"}}
  read:
    side_effect: read_only
    target: "test:{id}"
  deafen:
    side_effect: read_only
    target: "test:deaf"
"""


def deaf_proxy(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """(home, the upstream's folder, the proxy's arguments) in front of ``deaf_upstream``."""
    home, upstream_dir, contracts = proxied_home(tmp_path)
    contracts.write_text(CONTRACTS)
    from cradle_kg.demo.scenario import AGENT

    return home, upstream_dir, [
        "-m", "cradle_kg", "mcp", "proxy", "--home", str(home), "--agent", AGENT,
        "--contracts", str(contracts), "--prefix", "test.up.", "--",
        sys.executable, str(DEAF), str(upstream_dir)]


def test_a_call_whose_write_failed_before_any_byte_is_refused_not_unknown(
        tmp_path: Path) -> None:
    home, upstream_dir, args = deaf_proxy(tmp_path)
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession) -> None:
        first = await s.call_tool("test.up.append", {"id": "n1", "text": "a"}, meta=key("k1"))
        assert not first.isError, first
        deaf = await s.call_tool("test.up.deafen", {})
        assert not deaf.isError, deaf  # its input closed, the process running
        seen["lost"] = await s.call_tool("test.up.append", {"id": "n2", "text": "b"},
                                         meta=key("k2"))
        # the upstream taken as gone at that write: refused before any intent
        seen["next"] = await s.call_tool("test.up.append", {"id": "n3", "text": "c"},
                                         meta=key("k3"))
        seen["same"] = await s.call_tool("test.up.append", {"id": "n2", "text": "b"},
                                         meta=key("k2"))
        seen["again"] = await append_once_served(s, "n2", "b", "k4")

    run(args, scenario)

    lost = seen["lost"].structuredContent
    assert lost["status"] == "failed", lost
    assert lost.get("refusal", {}).get("code") == "upstream_not_reached", lost
    assert not [r for r in lost["reasons"] if "human task" in r], lost["reasons"]
    assert_refused_retryable([seen["next"]])
    same = seen["same"]
    assert same.meta["cradle-kg/replayed"] is True, same.meta  # the recorded refusal
    assert same.structuredContent["refusal"]["code"] == "upstream_not_reached"
    assert not seen["again"].isError, seen["again"].structuredContent
    assert [c["id"] for c in received(upstream_dir, "append")] == ["n1", "n2"]  # k4's only
    assert len(starts(upstream_dir)) == 2  # started again

    events = journaled(home)
    kinds = [e.kind for e in events]
    assert not [k for k in kinds if k.startswith("human_task")], kinds
    # n2's first intent is k2's (k4's came later)
    intent = next(e for e in events if e.kind == "action.intent"
                  and e.payload["action"]["arguments"].get("id") == "n2")
    about_k2 = [e.kind for e in events if e.subject == intent.subject
                and e.kind.startswith("action.")]
    assert about_k2 == ["action.intent", "action.observed", "action.replayed"], about_k2
    # called once: no retry, no lookup; answered again from the record
    assert not [e for e in events if "k3" in str(e.payload)]  # nothing of it written


def test_a_call_the_upstream_read_before_it_left_stays_unknown(tmp_path: Path) -> None:
    """Written whole, then the upstream left without an answer: it may have acted on it
    (it did read it). Its retry under the same key finds the session closed — that
    request is never sent — but the first one was: a human task, never the refusal."""
    home, upstream_dir, args = deaf_proxy(tmp_path)
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession) -> None:
        seen["vanish"] = await s.call_tool("test.up.append", {"id": "vanish", "text": "v"},
                                           meta=key("kv"))

    run(args, scenario)

    out = seen["vanish"].structuredContent
    assert [c["id"] for c in received(upstream_dir, "append")] == ["vanish"]  # it got it
    assert out["status"] == "failed" and "refusal" not in out, out
    assert any("human task" in r for r in out["reasons"]), out["reasons"]
    kinds = [e.kind for e in journaled(home)]
    assert kinds.count("human_task.opened") == 1, kinds


def test_only_a_line_of_which_nothing_was_written_is_not_sent(monkeypatch: Any) -> None:
    """Strict, at the write itself: ``EPIPE`` on the first write of a line — not sent;
    after part of the line was written — it may have been read: not marked."""
    import os

    import pytest
    from mcp.shared.exceptions import McpError

    from cradle_kg.integrations import upstream_stdio
    from cradle_kg.integrations.upstream_stdio import never_sent, start_stdio

    def attempt(partial: bool) -> McpError:
        client = start_stdio([sys.executable, "-c", "import sys; sys.stdin.buffer.read()"],
                             1 << 20)
        writes: list[int] = []

        class Shim:
            def __getattr__(self, name: str) -> Any:
                return getattr(os, name)

            def write(self, fd: int, data: Any) -> int:
                if fd != client._stdin:
                    return os.write(fd, data)
                writes.append(len(data))
                if partial and len(writes) == 1:
                    return int(os.write(fd, bytes(data[:5])))
                raise BrokenPipeError(32, "Broken pipe")

        monkeypatch.setattr(upstream_stdio, "os", Shim())
        try:
            with pytest.raises(McpError) as raised:
                client.request("tools/call", {"name": "append", "arguments": {}}, 5.0)
            assert not client.alive()  # taken as gone at that write
            return raised.value
        finally:
            monkeypatch.undo()
            client.stop()

    assert never_sent(attempt(partial=False))
    assert not never_sent(attempt(partial=True))
