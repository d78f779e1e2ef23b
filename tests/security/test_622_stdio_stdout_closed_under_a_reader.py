"""Finding: ``StdioClient.stop`` closed the upstream's stdout while a call's own thread
was still reading it, and that thread then read from whatever took the number.

A call reads its answer on its own thread (``_await``: ``poll`` on stdout, then
``os.read`` on the descriptor number kept at start). ``stop`` closed stdout once the idle
reader had left, not once no call read: with the upstream's stdout held by a process it
left behind, the call's thread stayed in ``poll``; when that process ended, it read one
chunk from the number — by then a descriptor the runtime had opened (a socket to the
journal's server: bytes taken out of its protocol).

Now: ``stop`` closes stdout only when no thread reads it (the session is closed first, so
no new reader starts; it waits up to ``TERMINATION_TIMEOUT`` for the one reading, and else
leaves it open, as for the idle reader).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

from mcp.shared.exceptions import McpError

from cradle_kg.integrations.upstream_stdio import start_stdio

from .stdio_hostile import upstream_script


def _upstream(pid_file: Path) -> str:
    """At the first call, leaves behind a process holding its stdout (in a session of
    its own: not ended with the upstream's group), writes its pid, and leaves."""
    return upstream_script(f'''
import subprocess
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                         stdout=sys.stdout.buffer.fileno(), start_new_session=True)
open({str(pid_file)!r}, "w").write(str(child.pid))
''')


def test_stop_leaves_a_reading_call_its_own_stdout(tmp_path: Path) -> None:
    pid_file = tmp_path / "held.pid"
    script = tmp_path / "leaves.py"
    script.write_text(_upstream(pid_file))
    client = start_stdio([sys.executable, str(script)], 1 << 20)
    client.initialize(30)
    assert client.process.stdout is not None
    number = client.process.stdout.fileno()
    failed: list[BaseException] = []

    def call() -> None:
        try:
            client.request("tools/call", {"name": "any", "arguments": {}}, 60.0)
        except McpError as exc:
            failed.append(exc)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    held: int | None = None
    r = w = -1
    try:
        for _ in range(3000):  # the upstream left its stdout held; the call reads it
            if pid_file.exists() and pid_file.read_text() and client.process.poll() is not None:
                break
            threading.Event().wait(0.01)
        held = int(pid_file.read_text())
        client.stop()  # the call is failed; its thread still waits in poll
        freed = True
        try:
            os.fstat(number)
            freed = False
        except OSError:
            pass
        if freed:  # the runtime opens a pipe: it takes the number
            r, w = os.pipe()
            if r != number:
                os.dup2(r, number)
                os.close(r)
                r = number
            os.write(w, b"OWNED-BY-THE-RUNTIME")
        os.kill(held, signal.SIGKILL)  # the held stdout ends: the call's poll returns
        held = None
        caller.join(30)
        assert not caller.is_alive()
        assert failed
        if freed:
            os.set_blocking(r, False)
            try:
                left = os.read(r, 100)
            except BlockingIOError:
                left = b""
            # before: the call's thread read the runtime's bytes out of its pipe
            assert left == b"OWNED-BY-THE-RUNTIME"
    finally:
        if held is not None:
            with contextlib.suppress(OSError):
                os.kill(held, signal.SIGKILL)
        for fd in (r, w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        client.stop()
