"""An upgrade the opening then refuses is not committed.

Finding (the twenty-sixth review: the upgrade path): a SQLite journal of an older format is
upgraded in place when a runtime opens it, and its schema and unique indexes are checked
against this code's only *after* the upgrade's transaction has committed. A format 13
journal handed over with ``events_idem_key`` made a plain index (``test_352``'s
alteration) was refused — "the journal's index `events_idem_key` was altered" — but the
file left behind was format 14: ``lineage_written`` derived and filled from the events,
the stamp rewritten. A refused opening wrote the journal (and an older format's derived
tables, rebuilt over what the author had left in them, no longer showed it).

Now the checks run inside the upgrade's transaction, before it commits: refused, it rolls
back — the file is still format 13, as it was handed. An unaltered one is upgraded as
before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.errors import JournalError
from cradle_kg.storage import JOURNAL_FORMAT, verify_journal
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.storage.sqlite import SqliteJournal
from tests.security.handed import author, copied_home

pytestmark = pytest.mark.sqlite_only("the SQLite file's own format and schema")

PLAIN_IDEM_INDEX = ("DROP INDEX events_idem_key",
                    "CREATE INDEX events_idem_key ON events(idem_key) WHERE idem_key IS NOT NULL")


def _format_13(tmp_path_factory: pytest.TempPathFactory, *altered: str) -> Path:
    """A handed home's journal as the previous release leaves it (format 13: no
    ``lineage_written``), with the author's statements run on it."""
    journal = copied_home(tmp_path_factory, "t563") / "journal.sqlite"
    conn = author(journal)
    conn.execute("DROP TABLE lineage_written")
    for statement in altered:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 13")
    conn.close()
    return journal


def _format_and_tables(journal: Path) -> tuple[int, list[str]]:
    conn = author(journal)
    try:
        return (conn.execute("PRAGMA user_version").fetchone()[0],
                [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE "
                                            "'lineage%' ORDER BY name")])
    finally:
        conn.close()


def test_a_refused_upgrade_leaves_the_format_as_it_was(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    journal = _format_13(tmp_path_factory, *PLAIN_IDEM_INDEX)
    with pytest.raises(JournalError) as refused:
        SqliteJournal(journal)
    assert "index `events_idem_key` was altered" in refused.value.message
    # before: (14, ['lineage_written', 'lineage_written_first', 'lineage_written_value'])
    assert _format_and_tables(journal) == (13, [])


def test_an_unaltered_one_is_upgraded(tmp_path_factory: pytest.TempPathFactory,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    journal = _format_13(tmp_path_factory)
    SqliteJournal(journal).close()
    assert _format_and_tables(journal) == (
        JOURNAL_FORMAT, ["lineage_written", "lineage_written_first", "lineage_written_value"])
    assert verify_journal(journal).intact
