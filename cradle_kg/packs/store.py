"""A pack's own SQLite file: the local system its tools write and its verifiers read back.

The file and its tables are created on the first write (``CREATE ... IF NOT EXISTS``
statements, applied by every new writing connection, so a removed file comes back whole).
Writes are one transaction each (holding the write lock from its first statement), in WAL
mode with ``synchronous=FULL``; reads go through a separate read-only connection — a
verifier can never write through the path it reads by — and find nothing, not an error,
before the first write.

Read-only connections are kept per thread and per file (path, device, inode: a file
replaced or removed at the same path is another file, never the old one's connection), a
few at a time, and not across ``fork``: opening one costs more than the questions a
verifier asks of it. A write opens its own connection and closes it.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from ..storage.wal_sync import sync_wal

#: how long a connection waits for another writer before giving up, in seconds
BUSY_TIMEOUT = 30.0
#: read-only connections a thread keeps open (the oldest is closed)
KEPT = 4

_KEPT_HERE = threading.local()


def _file_key(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _kept() -> OrderedDict[tuple[str, int, int], sqlite3.Connection]:
    """This thread's readers, forgotten (not closed: SQLite's rule) in a forked child."""
    conns: OrderedDict[tuple[str, int, int], sqlite3.Connection] | None = getattr(
        _KEPT_HERE, "conns", None)
    if conns is None or getattr(_KEPT_HERE, "pid", None) != os.getpid():
        conns = _KEPT_HERE.conns = OrderedDict()
        _KEPT_HERE.pid = os.getpid()
    return conns


def _reader(path: Path) -> sqlite3.Connection | None:
    """This thread's read-only connection to the file at ``path`` (None: no file yet).

    Reusing it reads what is committed now: in autocommit mode each statement takes a new
    read snapshot (WAL), and a read-only connection cannot hold a write."""
    found = _file_key(path)
    if found is None:
        return None
    conns = _kept()
    key = (str(path), *found)
    conn = conns.get(key)
    if conn is not None:
        conns.move_to_end(key)
        return conn
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                           timeout=BUSY_TIMEOUT, isolation_level=None)
    if not _schema_in(conn):
        conn.close()  # made, its schema not committed yet: nothing written (not kept)
        return None
    conns[key] = conn
    while len(conns) > KEPT:
        conns.popitem(last=False)[1].close()
    return conn


def _schema_in(conn: sqlite3.Connection) -> bool:
    """Whether the file holds its schema: :meth:`PackStore.writing` commits it whole, so a
    file with no table yet is one whose first write has not committed."""
    return conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None


#: per database file, the inode of the WAL last synced (its folder is synced once per inode)
_WAL_INODES: dict[str, int | None] = {}


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
        # a connection of its own, closed at the end: the file alone holds what was written
        # once no reader is open (a copy of it is whole), and the schema is applied anew
        with closing(sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT,
                                     isolation_level=None)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            # the commit is not synced under the lock: the block syncs the WAL once the next
            # writer may go on (as the journal's appends do), before it returns
            conn.execute("PRAGMA synchronous=NORMAL")
            with _writer_queue(self.path):
                # INVARIANT: the schema lands whole or not at all (one transaction): a
                # reader between the file's creation and its tables read "no such table"
                # (a pack's validator failed closed on it: 40 of 50 threads submitting one
                # credit at once were denied, tests/test_plans_and_concurrency.py), and a
                # reader that sees no table yet reads nothing written (:func:`_schema_in`)
                conn.executescript(f"BEGIN IMMEDIATE;\n{self.schema}\n;\nCOMMIT;")
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            # INVARIANT: a write is on disk when the block returns (a tool's effect is
            # durable before the gateway observes it)
            ok, inode = sync_wal(self.path, _WAL_INODES.get(str(self.path)))
            if not ok:
                raise OSError(f"the pack database `{self.path}` could not be synced to disk: "
                              "the write is committed but not confirmed durable")
            _WAL_INODES[str(self.path)] = inode

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection | None]:
        """This thread's read-only connection to the file (None before the first write):
        each statement reads what is committed when it runs (autocommit); a ``BEGIN`` of
        the caller's (one snapshot for several reads) never outlives the block."""
        conn = _reader(self.path)
        try:
            yield conn
        finally:
            if conn is not None and conn.in_transaction:
                conn.rollback()

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """A query over a read-only connection; no rows when nothing was written yet."""
        with self.reading() as conn:
            return [] if conn is None else list(conn.execute(sql, params).fetchall())

    def row(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        found = self.rows(sql, params)
        return found[0] if found else None
