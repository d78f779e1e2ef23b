"""A pack's own SQLite file: the local system its tools write and its verifiers read back.

The file and its tables are created on the first write (``CREATE ... IF NOT EXISTS``
statements, applied by every writing connection, so a removed file comes back whole).
Writes are one transaction each (holding the write lock from its first statement), in WAL
mode with ``synchronous=FULL``; reads go through
a separate read-only connection — a verifier can never write through the path it reads
by — and find nothing, not an error, before the first write.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

#: how long a connection waits for another writer before giving up, in seconds
BUSY_TIMEOUT = 30.0


@contextmanager
def _writer_queue(path: Path) -> Iterator[None]:
    """Hold ``<path>-writer`` exclusively (an ``flock``: released by the kernel if the
    process dies); where it cannot be made (a read-only folder) SQLite's busy handler
    orders the writers alone. It only orders them: ``BEGIN IMMEDIATE`` excludes them."""
    try:
        fd = os.open(f"{path}-writer", os.O_CREAT | os.O_RDWR, 0o600)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the file releases its lock


class PackStore:
    def __init__(self, path: Path, schema: str) -> None:
        self.path = path
        self.schema = schema

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """One transaction: committed when the block ends, rolled back when it raises.

        It holds the database's write lock from its first statement (``BEGIN IMMEDIATE``):
        what a tool reads in it is what it writes over — two workers' read-modify-writes
        of one row never lose one (Python's default transaction began at the first write,
        after the reads: 4 processes, 100 increments each, of one counter ended at 100). Writers
        wait for each other in the kernel's queue (an ``flock`` on ``<file>-writer``, as
        the journal's do), woken when the lock frees, not by SQLite's busy handler's
        sleeps of 1 to 100 ms."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT,
                                     isolation_level=None)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(self.schema)
            with _writer_queue(self.path):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """A query over a read-only connection; no rows when nothing was written yet."""
        if not self.path.exists():
            return []
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT)) as conn:
            return list(conn.execute(sql, params).fetchall())

    def row(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        found = self.rows(sql, params)
        return found[0] if found else None
