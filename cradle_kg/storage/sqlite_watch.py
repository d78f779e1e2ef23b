"""What a query worker reads of an embedded journal: whether another process committed,
and the sequence number at its head — nothing else, so nothing else is imported.

A worker looks before every query (:mod:`cradle_kg.server.front`). It used to open a
whole :class:`~.sqlite.SqliteJournal` for that, which brought the event records (pydantic)
and every journal module into each worker: ~15 MB of the fork server, and of each
worker's resident set. The two reads are the journal's own (:data:`HEAD_SQL` is what
``SqliteJournal.head`` runs); the connection never writes.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Final

#: the journal's head row (its seq and hash): ``SqliteJournal.head`` reads the same
HEAD_SQL: Final = "SELECT seq, hash FROM head WHERE one = 1"
#: how long a read waits for a writer's lock (the journal's own setting)
BUSY_MS: Final = 30_000


class JournalWatch:
    """``watermark()`` and ``head_seq()`` of an embedded journal, on one read connection."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._conn = sqlite3.connect(self.path, timeout=BUSY_MS / 1000,
                                     isolation_level=None, check_same_thread=False)
        self._conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
        self._lock = threading.Lock()

    def watermark(self) -> int:
        """Changes whenever *another* connection commits (SQLite's ``data_version``)."""
        with self._lock:
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def head_seq(self) -> int:
        """The seq of the journal's last event (0 when it has none)."""
        with self._lock:
            row = self._conn.execute(HEAD_SQL).fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        self._conn.close()


__all__ = ["HEAD_SQL", "JournalWatch"]
