"""``cradle-kg graph follow`` run as a real process, stopped a while after it first spoke.

A follower started on a loaded machine may take seconds before its first round (its
interpreter's start-up, the imports): a test that stopped it a fixed time after starting it
saw one round, or none, where it looks for several (``test_80`` and ``test_23`` each failed a
CI run so at load 8-10). Its output is read as it comes, and it is stopped ``after``
seconds past its first line.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence


def follow_a_while(args: Sequence[str], env: Mapping[str, str], *, after: float,
                   first_within: float = 120.0) -> tuple[int, bytes, bytes]:
    """Run ``python -m cradle_kg graph follow ARGS`` with ``env``; SIGTERM it ``after``
    seconds past its first line on stdout (failing when none came ``first_within`` seconds
    of its start, or when it ended before being stopped); its exit code, stdout, stderr."""
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen([sys.executable, "-m", "cradle_kg", "graph", "follow", *args],
                                stdout=subprocess.PIPE, stderr=errors, env=dict(env))
        got: list[bytes] = []
        first = threading.Event()

        def read() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                got.append(raw)
                first.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            assert first.wait(first_within), "the follower said nothing"
            time.sleep(after)
            assert proc.poll() is None, "the follower ended"
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            reader.join(30)
            errors.seek(0)
            err = errors.read()
    return proc.returncode, b"".join(got), err
