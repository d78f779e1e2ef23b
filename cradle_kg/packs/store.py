"""A pack's own SQLite file: the local system its tools write and its verifiers read back.

The file and its tables are created on the first write (``CREATE ... IF NOT EXISTS``
statements, applied by every writing connection, so a removed file comes back whole).
Writes are one transaction each, in WAL mode with ``synchronous=FULL``; reads go through
a separate read-only connection — a verifier can never write through the path it reads
by — and find nothing, not an error, before the first write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

#: how long a connection waits for another writer before giving up, in seconds
BUSY_TIMEOUT = 30.0


class PackStore:
    def __init__(self, path: Path, schema: str) -> None:
        self.path = path
        self.schema = schema

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """One transaction: committed when the block ends, rolled back when it raises."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(self.schema)
            with conn:
                yield conn

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
