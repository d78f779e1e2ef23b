"""Attack review (a journal handed to an auditor): commands that read wrote the journal.

``audit verify`` reads a journal without writing a byte, but the other commands an
auditor runs on a handed home — ``runs list`` / ``runs show``, ``tasks list``, ``graph
rebuild``, ``replay`` — opened it as a runtime does: read-write, switched to WAL, and a
journal of an older format was upgraded in place. The upgrade deletes and refills the
derived tables, so a trigger the file's author had put on one ran on the auditor's
machine (here it only records that it ran) and the file the auditor was given was no
longer the one handed over — ``audit verify``'s own message invites that upgrade ("open it
once with this cradle-kg"). Now a command that only reads opens the journal read only
(SQLite ``mode=ro``): it refuses a journal of another format in one line (exit 2) and
writes nothing; and a runtime refuses to open, let alone upgrade, a journal that holds a
trigger or a view — SQL the runtime never wrote, which would run with its writes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import JournalError
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli
from tests.security.handed import HIDDEN, author, digest, handed_home, refused_as_it_was

pytestmark = pytest.mark.sqlite_only("the SQLite file's own schema and format")

_READERS = (
    ("runs", "list"),
    ("runs", "show", HIDDEN),
    ("tasks", "list"),
    ("graph", "rebuild"),
    ("replay", "--strict"),
)


def _plant_trigger(journal: Path, *, user_version: int | None) -> None:
    conn = author(journal)
    conn.execute("CREATE TABLE planted (what TEXT)")
    conn.execute("CREATE TRIGGER planted AFTER INSERT ON runs BEGIN "
                 "INSERT INTO planted VALUES (NEW.run_id); END")
    if user_version is not None:
        conn.execute(f"PRAGMA user_version = {user_version}")
    conn.close()


def _ran(journal: Path) -> int:
    conn = sqlite3.connect(f"file:{journal}?mode=ro&immutable=1", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM planted").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def older(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A handed home whose journal says format 5 (upgraded by this runtime: every derived
    table refilled) and holds its author's trigger."""
    home = handed_home(tmp_path_factory, "t293")
    _plant_trigger(home / "journal.sqlite", user_version=5)
    return home


@pytest.mark.parametrize("command", _READERS, ids=lambda c: " ".join(c[:2]))
def test_a_reading_command_leaves_an_older_journal_as_it_was(
        older: Path, command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    refused_as_it_was(older, command, format_said="format `5`")
    assert _ran(older / "journal.sqlite") == 0


def test_a_runtime_never_upgrades_a_journal_holding_a_trigger(older: Path) -> None:
    journal = older / "journal.sqlite"
    before = digest(journal)
    with pytest.MonkeyPatch.context() as env:
        env.delenv(JOURNAL_URL_ENV, raising=False)
        with pytest.raises(JournalError, match="trigger `planted`"):
            Runtime(older)
    assert _ran(journal) == 0
    assert digest(journal) == before


def test_a_runtime_never_writes_under_a_trigger(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    home = handed_home(tmp_path_factory, "t293-current")
    journal = home / "journal.sqlite"
    _plant_trigger(journal, user_version=None)
    conn = author(journal)
    conn.execute("CREATE VIEW shown AS SELECT run_id FROM runs")
    conn.execute("DROP TRIGGER planted")
    conn.close()
    with pytest.MonkeyPatch.context() as env:
        env.delenv(JOURNAL_URL_ENV, raising=False)
        with pytest.raises(JournalError, match="view `shown`"):
            Runtime(home)


def test_a_current_journal_still_reads(tmp_path_factory: pytest.TempPathFactory,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    home = handed_home(tmp_path_factory, "t293-reads")
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    journal = home / "journal.sqlite"
    author(journal).close()  # out of WAL, as handed
    before = digest(journal)
    res = run_cli("runs", "show", HIDDEN, "--home", str(home))
    assert res.returncode == 0, res.stderr
    assert HIDDEN in res.stdout
    assert digest(journal) == before


def test_journal_copy_leaves_an_older_source_as_it_was(
        tmp_path_factory: pytest.TempPathFactory, pg_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``journal copy --to`` only reads its source: an older one is refused, not upgraded
    in place (no trigger here: the format alone)."""
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = handed_home(tmp_path_factory, "t293-copy")
    journal = home / "journal.sqlite"
    conn = author(journal)
    conn.execute("PRAGMA user_version = 5")
    conn.close()
    before = digest(journal)
    res = run_cli("journal", "copy", "--to", pg_url, "--home", str(home))
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "format `5`" in res.stdout + res.stderr
    assert digest(journal) == before
