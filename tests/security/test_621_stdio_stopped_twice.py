"""Finding: a stdio upstream's client stopped twice closed two descriptors that were no
longer its own, and wrote a byte into one of them.

The proxy stops the first upstream's client when it started one again
(``Upstream._restart_loop``: ``_stop(old)``), and the block that started it stops it again
when the proxy leaves (``stdio_upstream``'s ``finally``). ``StdioClient.stop`` closed its
wake-up pipe's two descriptors by number each time, and its ``_close`` wrote a byte to one
of them: the second time, those numbers were whatever the process had opened since — a
journal's file, a graph store's connection — written into, then closed under their owner.

Now: ``stop`` runs once (a second call returns), and ``_close`` wakes the idle reader only
when it closes the session (the first time), never on a descriptor closed already.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from cradle_kg.integrations.upstream_stdio import start_stdio

from .stdio_hostile import upstream_script

#: answers ``initialize``; leaves at the end of its stdin
UPSTREAM = upstream_script("")


def test_a_second_stop_touches_no_descriptor_opened_since(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text(UPSTREAM)
    client = start_stdio([sys.executable, str(script)], 1 << 20)
    client.initialize(30)
    client.stop()  # the restart loop's stop of the old client
    # the runtime opens files meanwhile: they take the numbers the stop freed
    paths = [tmp_path / f"owned-{n}" for n in range(8)]
    opened = [os.open(p, os.O_RDWR | os.O_CREAT) for p in paths]
    try:
        client.stop()  # the proxy leaving: its block stops the same client again
        closed = []
        for fd in opened:
            try:
                os.fstat(fd)
            except OSError:
                closed.append(fd)
        # before: two of the runtime's descriptors closed under it (and a byte written)
        assert closed == []
        assert [p.read_bytes() for p in paths] == [b""] * len(paths)
    finally:
        for fd in opened:
            with contextlib.suppress(OSError):
                os.close(fd)
