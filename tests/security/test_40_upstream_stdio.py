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

from pathlib import Path

import pytest

from .jsonl_process import (
    UpstreamProxy,
    capped_proxy_home,
    failed_text,
    observed_after,
    upstream_script,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")

#: the proxy may grow by this much while the upstream sends 300 MB
GROWTH_MB = 96
UPSTREAM = upstream_script(
    '[{"name": n, "inputSchema": {"type": "object"}} for n in ("blast", "endless", "fine")]',
    r'''    elif method == "tools/call" and msg["params"]["name"] in ("blast", "endless"):
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
''')
TOOLS = ("blast", "endless", "fine")



@pytest.mark.slow
def test_an_upstream_answer_without_end_is_dropped_and_the_call_fails(
        home: Path, tmp_path: Path) -> None:
    capped_proxy_home(home)  # the upstream's lines are held to 5 MiB
    proxy = UpstreamProxy(home, tmp_path, UPSTREAM, TOOLS)
    try:
        blast, grown = proxy.call_watching_memory(2, "test.up.blast", limit_mb=GROWTH_MB)
        assert "limit" in failed_text(blast), blast
        assert grown < GROWTH_MB
        # the session goes on; lines that are not messages before the answer are skipped
        fine, _ = proxy.call_watching_memory(3, "test.up.fine", limit_mb=GROWTH_MB)
        assert fine["result"].get("isError") is not True, fine
        assert fine["result"]["structuredContent"] == {"ok": True}, fine
        endless, grown = proxy.call_watching_memory(4, "test.up.endless", limit_mb=GROWTH_MB,
                                                    timeout=30)
        assert "limit" in failed_text(endless), endless  # at once, not at the 60 s timeout
        assert grown < GROWTH_MB
    finally:
        code = proxy.close()  # the endless upstream is terminated as the proxy leaves
    assert observed_after(code, home, tmp_path) == [False, True, False]
