"""A hostile stdio upstream holds a call past its deadline with an endless stream of lines.

Attack: behind ``cradle-kg mcp proxy -- COMMAND`` the upstream answers ``initialize``,
then, asked to call a tool, never answers and writes notifications (or blank lines) without
pause. The proxy's JSON-RPC client (:class:`cradle_kg.integrations.upstream_stdio.
StdioClient`) read on while there was something to read and looked at the call's deadline
only when stdout was quiet: the call never failed, its runtime thread held for as long as
the upstream kept writing.

What must hold: the call fails with the deadline's error within its deadline (plus a
little), however fast the upstream writes; the next call on the client fails at its
deadline too.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from mcp.shared.exceptions import McpError

from cradle_kg.integrations.upstream_stdio import REQUEST_TIMEOUT, stdio_upstream

from .stdio_hostile import timed_call, upstream_script

UPSTREAM = upstream_script(r'''
note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "info", "data": "x"}}).encode() + b"\n"
while True:
    out.write(note * 64)
    out.flush()
''')


def test_a_stream_of_notifications_does_not_hold_a_call(tmp_path: Path) -> None:
    script = tmp_path / "stream.py"
    script.write_text(UPSTREAM)
    with stdio_upstream([sys.executable, str(script)], 1 << 20) as client:
        client.initialize(30)
        for _ in range(2):
            out: list[object] = []
            thread = threading.Thread(target=timed_call, args=(client, "any", 1.0, out),
                                      daemon=True)
            thread.start()
            thread.join(10)
            # before: read on for as long as the upstream wrote
            assert not thread.is_alive(), "the call was held past its deadline"
            assert isinstance(out[0], McpError)
            assert out[0].error.code == REQUEST_TIMEOUT
            assert isinstance(out[-1], float) and out[-1] < 4.0
