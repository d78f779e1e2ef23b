"""Processes raced against one journal: started together, one answer each, never left behind."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess
from typing import Any, Protocol


class _Answers(Protocol):
    def get(self, block: bool = ..., timeout: float | None = ...) -> Any: ...


def race(procs: Sequence[BaseProcess], answers: _Answers, *,
         meanwhile: Callable[[], None] | None = None, timeout: float = 300) -> list[Any]:
    """Start ``procs``, run ``meanwhile`` (the parent's part of the race, if any), then take
    one answer per process from ``answers``; every process is joined, and killed if it
    hangs, whatever happens. Asserts they all exited cleanly."""
    for proc in procs:
        proc.start()
    try:
        if meanwhile is not None:
            meanwhile()
        got = [answers.get(timeout=timeout) for _ in procs]
    finally:
        for proc in procs:
            proc.join(60)
            if proc.exitcode is None:
                proc.kill()
    assert all(proc.exitcode == 0 for proc in procs), [proc.exitcode for proc in procs]
    return got
