"""Finding: a call racing the stop of a stdio upstream wrote its request into whatever the
process opened next.

``StdioClient.stop`` (the proxy leaving, or the old channel of an upstream started again)
closes the upstream's stdin, then waits up to ``TERMINATION_TIMEOUT`` for it to leave
before the session is marked closed. A call begun in that window passed the "closed?"
check and wrote its line with ``os.write`` on the descriptor number kept at start — closed,
and so free for the next ``open``: the request (its arguments, the idempotency key) went
into an unrelated file or socket of the runtime (a journal file, a graph store's
connection), and the call was not even said to be unsent.

Now: the write lock guards a flag set when stdin is closed; a request finding it set
writes nothing and fails ``Connection closed``, marked as never sent (it was not: the
upstream cannot read it), whatever descriptor now has the number.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest
from mcp.shared.exceptions import McpError

from cradle_kg.integrations import upstream_stdio
from cradle_kg.integrations.upstream_stdio import (
    CONNECTION_CLOSED,
    never_sent,
    start_stdio,
)

from .stdio_hostile import upstream_script

#: answers ``initialize``; at the end of its stdin stays (until killed)
UPSTREAM = upstream_script("time.sleep(120)\n")


def test_a_request_after_stdin_closed_writes_nowhere(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # the window held open until the test kills the upstream (no timing involved)
    monkeypatch.setattr(upstream_stdio, "TERMINATION_TIMEOUT", 120.0)
    script = tmp_path / "stays.py"
    script.write_text(UPSTREAM)
    client = start_stdio([sys.executable, str(script)], 1 << 20)
    client.initialize(30)
    assert client.process.stdin is not None
    number = client.process.stdin.fileno()
    stopper = threading.Thread(target=client.stop, daemon=True)
    stopper.start()
    opened: list[int] = []
    try:
        for _ in range(2000):  # until stop closed stdin: its number is free again
            try:
                os.fstat(number)
            except OSError:
                break
            threading.Event().wait(0.005)
        assert client.process.stdin.closed
        # the runtime opens a file, which gets that number (as the lowest free one would)
        fd = os.open(tmp_path / "unrelated", os.O_RDWR | os.O_CREAT)
        opened.append(fd)
        if fd != number:
            os.dup2(fd, number)
            opened.append(number)
        with pytest.raises(McpError) as raised:
            client.request("tools/call", {"name": "pay", "arguments": {
                "secret": "SENT-TO-THE-WRONG-PLACE"}}, 1.0)
        written = (tmp_path / "unrelated").read_bytes()
        # before: the request's line, written into the unrelated file
        assert written == b"", written[:120]
        assert raised.value.error.code == CONNECTION_CLOSED
        assert never_sent(raised.value)
    finally:
        client.process.kill()
        stopper.join(30)
        for fd in opened:
            os.close(fd)
    assert not stopper.is_alive()
