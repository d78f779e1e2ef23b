"""Crash points: where the crash-injection harness kills the process, for real.

Setting ``CRADLE_CRASH_AT`` to one of :data:`CRASH_POINTS` (optionally ``point:N``, the
N-th pass) makes the process kill itself with SIGKILL there. The crash-recovery tests use
it to die at each point of the lifecycle (the loop's and the graph store's); it costs one
string comparison otherwise.
"""

from __future__ import annotations

import os
import signal

CRASH_POINTS = (
    "before_intent",
    "after_intent",
    "during_call",
    "after_call",
    "before_verification",
    "before_commit",
)
_CRASH_AT, _, _CRASH_PASS = os.environ.get("CRADLE_CRASH_AT", "").partition(":")
#: ``CRADLE_CRASH_AT=point:N`` dies at the N-th pass through the point (default the first)
_crash_countdown = int(_CRASH_PASS or 1)


def arm(point: str, *, at_pass: int = 1) -> None:
    """Arm a crash point in this process (the harness does it in forked children)."""
    global _CRASH_AT, _crash_countdown
    _CRASH_AT, _crash_countdown = point, at_pass


def crashpoint(name: str) -> None:
    """Die here, for real, when the crash-injection harness asks for it."""
    global _crash_countdown
    if name == _CRASH_AT:
        _crash_countdown -= 1
        if _crash_countdown <= 0:
            os.kill(os.getpid(), signal.SIGKILL)
