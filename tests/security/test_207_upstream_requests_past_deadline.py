"""A hostile stdio upstream holds a call past its deadline with requests it never reads.

Attack: behind ``cradle-kg mcp proxy -- COMMAND`` the upstream reads the call's request,
then stops reading its stdin and writes requests to the proxy (``ping``, ``roots/list``)
with long ids, and never answers. The proxy's own JSON-RPC client
(:class:`cradle_kg.integrations.upstream_stdio.StdioClient`) answers each of them on the
thread that reads the call's answer, and gave each reply five seconds to be written: once
the pipe was full, the call waited five seconds per request, past its deadline without
bound, holding the write lock that every other call's request waits for.

What must hold: the call fails with the deadline's error within its deadline (plus a
little), however many requests the upstream sends; a second call on another thread is
not held past its own deadline either.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from mcp.shared.exceptions import McpError

from cradle_kg.integrations.upstream_stdio import REQUEST_TIMEOUT, stdio_upstream

from .stdio_hostile import timed_call, upstream_script

#: answers ``initialize``; on any other request stops reading and floods requests
UPSTREAM = upstream_script(r'''
for n in range(400):
    method = "ping" if n % 2 else "roots/list"
    out.write(json.dumps({"jsonrpc": "2.0", "id": "r%d-" % n + "x" * 3000,
                          "method": method}).encode() + b"\n")
    out.flush()
time.sleep(120)
''')


def test_requests_the_upstream_does_not_read_do_not_hold_a_call(tmp_path: Path) -> None:
    script = tmp_path / "flood.py"
    script.write_text(UPSTREAM)
    with stdio_upstream([sys.executable, str(script)], 1 << 20) as client:
        client.initialize(30)
        first: list[object] = []
        second: list[object] = []  # begun while the first call reads the flood
        threads = [threading.Thread(target=timed_call, args=(client, name, 2.0, out),
                                kwargs={"delay": delay}, daemon=True)
                   for name, delay, out in (("any", 0.0, first), ("other", 0.5, second))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(15)
        # before: each call held five seconds a request, past its 2 s deadline
        assert not any(t.is_alive() for t in threads), "a call was held past its deadline"
    for out in (first, second):
        assert isinstance(out[0], McpError)
        assert out[0].error.code == REQUEST_TIMEOUT
        assert isinstance(out[-1], float) and out[-1] < 6.0
