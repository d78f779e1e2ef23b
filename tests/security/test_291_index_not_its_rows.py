"""Attack review (a journal handed to an auditor): an index whose rows are not its table's.

The author of a journal controls every byte of the file. With ``PRAGMA writable_schema``
they can build an index over some rows only (a partial index) and then write the plain
index's definition into ``sqlite_master``: the schema reads exactly as the runtime creates
it, but every query SQLite answers through that index misses the rows left out. Rebuilding
the derived tables with the public code on that file made them agree with what the index
shows, so ``audit verify`` (and ``--semantics``) said *intact* — with the same head, an
anchor taken before matched — while ``runs list`` and ``runs show`` no longer knew a run
the chain holds. Now verify checks that every index holds exactly its table's rows
(SQLite's ``integrity_check``) before it reads anything else.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.storage import sqlite_derived as derived
from cradle_kg.storage import verify_journal
from cradle_kg.storage.sqlite import SqliteJournal
from tests.security.handed import HIDDEN, author, handed_home

pytestmark = pytest.mark.sqlite_only("the SQLite file's own b-trees")


def _leave_run_out_of_its_index(journal_file: Path) -> None:
    conn = author(journal_file)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events_run'").fetchone()[0]
    conn.execute("DROP INDEX events_run")
    conn.execute(f"CREATE INDEX events_run ON events(run_id, seq) WHERE run_id <> '{HIDDEN}'")
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'events_run'", (sql,))
    conn.execute("PRAGMA writable_schema=OFF")
    conn.close()
    conn = author(journal_file)
    conn.execute("BEGIN")
    derived.rebuild(conn)  # the public code, run on the forged index
    conn.execute("COMMIT")
    conn.close()


def test_an_index_missing_rows_of_its_table_is_broken(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    home = handed_home(tmp_path_factory, "t291")
    journal_file = home / "journal.sqlite"
    before = verify_journal(journal_file)
    assert before.intact
    _leave_run_out_of_its_index(journal_file)
    with SqliteJournal(journal_file) as journal:  # the lie the auditor would be told
        assert not journal.has_run(HIDDEN)
        assert HIDDEN in {e.run_id for e in journal.events()}

    for semantics in (False, True):
        report = verify_journal(journal_file, semantics=semantics)
        assert not report.intact, report
        assert "events_run" in (report.reason or ""), report.reason
        assert "index" in (report.reason or "")
