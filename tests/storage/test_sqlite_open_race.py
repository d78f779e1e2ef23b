"""Several processes opening the same brand-new SQLite journal at once.

Converting a new file to WAL takes an exclusive lock; when two openers race for it SQLite
answers ``database is locked`` at once to one of them, without calling the busy handler
(deadlock avoidance). Before the fix one opener in about thirty failed that way (it failed
``test_four_processes_one_key_one_effect`` in CI, whose four workers create the journal).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.storage.sqlite import JOURNAL_FORMAT, SqliteJournal
from tests.racers import ForkedPython

_OPEN = """
import sys
from pathlib import Path
from cradle_kg.storage.sqlite import SqliteJournal
SqliteJournal(Path(sys.argv[1])).close()
"""


@pytest.mark.slow
def test_processes_racing_to_create_one_journal_all_open_it(tmp_path: Path) -> None:
    for round_ in range(6):
        path = tmp_path / f"r{round_}" / "journal.sqlite"
        # four processes of their own, forked from the fork server: they reach the open
        # closer together than four interpreters starting (~0.3 s of CPU each) would
        procs = [ForkedPython(_OPEN, [str(path)], env=os.environ, cwd=os.getcwd())
                 for _ in range(4)]
        errors = [p.communicate(timeout=120)[1] for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == JOURNAL_FORMAT
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0
        conn.close()


class _LockedFor:
    """A connection whose first ``n`` statements fail the way the race makes them fail."""

    def __init__(self, conn: sqlite3.Connection, n: int) -> None:
        self.conn, self.left, self.statements = conn, n, []

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.statements.append(sql)
        if self.left:
            self.left -= 1
            raise sqlite3.OperationalError("database is locked")
        return self.conn.execute(sql, *args)


def _bare(conn: object) -> SqliteJournal:
    journal = object.__new__(SqliteJournal)
    journal._conn = conn  # type: ignore[assignment]
    return journal


def test_a_busy_answer_while_entering_wal_is_retried(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "new.sqlite", isolation_level=None)
    locked = _LockedFor(conn, 3)
    _bare(locked)._enter_wal()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert len(locked.statements) == 5  # three refused, then the query and the switch
    conn.close()


def test_a_journal_already_in_wal_is_not_switched_again(tmp_path: Path) -> None:
    SqliteJournal(tmp_path / "j.sqlite").close()
    conn = sqlite3.connect(tmp_path / "j.sqlite", isolation_level=None)
    seen = _LockedFor(conn, 0)
    _bare(seen)._enter_wal()
    assert seen.statements == ["PRAGMA journal_mode"]  # a read, no lock to convert
    conn.close()


def test_another_operational_error_is_not_retried(tmp_path: Path) -> None:
    class Broken:
        calls = 0

        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            Broken.calls += 1
            raise sqlite3.OperationalError("disk I/O error")

    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        _bare(Broken())._enter_wal()
    assert Broken.calls == 1
