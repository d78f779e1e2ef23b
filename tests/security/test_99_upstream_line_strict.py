"""A stdio upstream's every line is read by the strict loader's rules before the SDK's.

Finding (the fourth attack review): ``mcp proxy -- COMMAND`` reads its upstream's lines
capped (``test_40``), then parses each with the SDK's ``JSONRPCMessage.model_validate_json``
— not the strict loader that reads ``mcp serve``'s own stdin (``test_31``). An upstream
answering a read with ``"structuredContent": {"ok": false, "ok": true}`` had it taken
last-wins: the call executed, ``reported_ok`` true — what a reviewer of the upstream's
answer reads first is not what the runtime recorded. A lone surrogate escaped in the answer
(``"\\ud800"``) made the SDK's parser refuse the line and send an exception on the
session's read stream: the call waited out the proxy's 60 s upstream timeout.

Now each line goes through the strict loader's rules first (``upstream_stdio.line_refusal``:
a key given twice, ``NaN``, a lone surrogate, a number past 1,000 digits, nesting past a
record's ceiling): a refused line that answers a waiting call fails that call at once
(a JSON-RPC error the gateway journals as a failed call); any other refused line is an
exception on the read stream, as a line that is not JSON was. A real ``cradle-kg mcp
proxy`` subprocess in front of a hostile upstream written here.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .jsonl_process import (
    UpstreamProxy,
    capped_proxy_home,
    failed_text,
    observed_after,
    upstream_script,
)

UPSTREAM = upstream_script(
    '[{"name": n, "inputSchema": {"type": "object"}} for n in ("twice", "surrogate", "fine")]',
    r'''    elif method == "tools/call":
        name = msg["params"]["name"]
        structured = {"twice": '{"ok": false, "ok": true}',
                      "surrogate": '{"ok": true, "v": "\\ud800"}',
                      "fine": '{"ok": true}'}[name]
        out.write(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text",'
                  b'"text":"read"}],"structuredContent":%s,"isError":false}}\n'
                  % (rid, structured.encode()))
        out.flush()
''')
TOOLS = ("twice", "surrogate", "fine")



@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_refused_answer_line_fails_its_call_at_once(home: Path, tmp_path: Path) -> None:
    capped_proxy_home(home)
    proxy = UpstreamProxy(home, tmp_path, UPSTREAM, TOOLS)
    try:
        twice = proxy.call(2, "test.up.twice", timeout=30)
        # before: executed, `{"ok": true}` (the second key won)
        assert "a key given twice" in failed_text(twice) or "duplicate key" in \
            failed_text(twice), twice
        started = time.monotonic()
        surrogate = proxy.call(3, "test.up.surrogate", timeout=30)  # before: 60 s, then
        assert "lone surrogate" in failed_text(surrogate), surrogate
        assert time.monotonic() - started < 20
        fine = proxy.call(4, "test.up.fine", timeout=30)  # the session goes on
        assert fine["result"].get("structuredContent") == {"ok": True}, fine  # type: ignore[union-attr]
    finally:
        code = proxy.close()
    assert observed_after(code, home, tmp_path) == [False, False, True]
