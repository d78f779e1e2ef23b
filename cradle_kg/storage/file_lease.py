"""Who is alive, on the SQLite journal: a worker lease held for the life of a runtime.

A runtime holds an exclusive ``flock`` on ``<home>/workers/<id>.lock`` for its whole life
and writes its worker id into every intent; the kernel drops the lock when the process
dies, SIGKILL included. Recovery leaves alone the intents of a worker that still holds
its lease: they are in flight, not dangling.
"""

from __future__ import annotations

import fcntl
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_WORKER_ID = re.compile(r"^w-[0-9a-f]{16}$")


class WorkerLease:
    """An exclusive lock held for the life of a runtime; the kernel releases it on death."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.id = "w-" + uuid.uuid4().hex[:16]
        self.path = directory / f"{self.id}.lock"
        # INVARIANT: the file appears under its final name only once it is locked, so a
        # recovery pass never mistakes a worker that is starting for a dead one
        tmp = directory / f".{self.id}.tmp"
        self._fd = os.open(tmp, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(tmp, self.path)

    def held(self) -> bool:
        """The lock is ours while our descriptor is open on the file that bears our name
        (the kernel keeps an ``flock`` for a stopped process: only a removed or replaced
        file makes :func:`worker_alive` answer no while this process lives)."""
        if self._fd < 0:
            return False
        try:
            return os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        if self._fd < 0:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = -1


def worker_alive(directory: Path, worker_id: str) -> bool:
    """True while the worker's process holds its lease."""
    if not _WORKER_ID.match(worker_id):
        return False
    try:
        fd = os.open(directory / f"{worker_id}.lock", os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextmanager
def exclusive_file(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` for the block (one holder across processes)."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
