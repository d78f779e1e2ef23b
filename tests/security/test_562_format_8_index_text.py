"""A format 8 journal as the release that made format 8 wrote it is upgraded, not called altered.

Finding (the twenty-sixth review: the upgrade path): the commit that made the SQLite
journal format 8 (``20adf05``) wrote its partial index on one line,
``CREATE INDEX events_subject_outcome ON events(subject, seq) WHERE kind = 'run.outcome'``;
the next one (``00a5d68``, still format 8) wrapped the line, and SQLite keeps the text as
written. The opening and ``audit verify`` compare each object's text with this code's,
byte for byte: a runtime opening such a journal upgraded it to format 14 (committed), then
refused it — "the journal's index `events_subject_outcome` was altered (not the schema
cradle-kg writes); it was not opened to write" — and ``audit verify`` called the honest,
upgraded file BROKEN. The home could no longer be opened. (Found by opening, with this
code, journals made by the code of each format's commits, 2 to 13: this was the one.)

Now the schema is compared token for token: whitespace between SQLite's tokens (never
inside a string or a quoted name) is not part of an object's definition. Anything else
altered is refused as before (``test_352``).

Then (the twenty-sixth review, the round's own changes): "whitespace" was Python's ``\\s``,
which also matches a no-break space (U+00A0) and the other Unicode spaces — characters
SQLite reads as part of a name. ``one INTEGER\\u00a0PRIMARY KEY`` is a column of type
``INTEGER\\u00a0PRIMARY KEY`` with no key at all; it compared equal to ``one INTEGER
PRIMARY KEY``, so a journal whose ``head`` (or ``events.seq``) primary key was made a type
name was opened to write and ``audit verify`` called it intact. Now only
SQLite's own whitespace (space, tab, newline, form feed, carriage return) is collapsed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import JournalError
from cradle_kg.storage import JOURNAL_FORMAT, verify_journal
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.storage.sqlite import SqliteJournal
from cradle_kg.storage.sqlite_verify import MASTER_SQL, schema_problem
from tests.security.handed import author, copied_home, keyed_intent

pytestmark = pytest.mark.sqlite_only("the SQLite file's own format and schema text")

#: what format 9 to 14 added (their tables drop their indexes with them)
LATER_TABLES = ("journal_keys", "approval_exclusions", "starting_runs", "unrun_approvals",
                "lineage_written")
LATER_INDEXES = ("events_subject_decided",)
#: the index as ``20adf05`` (format 8) wrote it: ``cradle_kg/storage/chain.py`` line 48 there
FORMAT_8_INDEX = ("CREATE INDEX IF NOT EXISTS events_subject_outcome ON events(subject, seq) "
                  "WHERE kind = 'run.outcome'")


@pytest.fixture
def format_8_home(tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    """A demo home with two executed credits, its journal as ``20adf05`` left it."""
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = copied_home(tmp_path_factory, "t562")
    conn = author(home / "journal.sqlite")
    for table in LATER_TABLES:
        conn.execute(f"DROP TABLE {table}")
    for index in (*LATER_INDEXES, "events_outcome", "events_subject_outcome"):
        conn.execute(f"DROP INDEX {index}")
    conn.execute(FORMAT_8_INDEX)
    conn.execute("PRAGMA user_version = 8")
    conn.close()
    return home


def test_the_first_format_8_journal_is_upgraded(format_8_home: Path) -> None:
    # before: JournalError "the journal's index `events_subject_outcome` was altered"
    with Runtime(format_8_home) as rt:
        assert next(iter(rt.journal.events()), None) is not None
    report = verify_journal(format_8_home / "journal.sqlite")
    assert report.intact, report.reason  # before: BROKEN, the index "altered"
    conn = author(format_8_home / "journal.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == JOURNAL_FORMAT
    conn.close()


@pytest.mark.parametrize("altered", [
    "CREATE INDEX events_subject_outcome ON events(subject, seq) WHERE kind = 'run.outcom'",
    "CREATE INDEX events_subject_outcome ON events(subject, seq) WHERE kind = 'run. outcome'",
    "CREATE INDEX events_subject_outcome ON events(subject)",
    "CREATE INDEX events_subject_outcome ON events(subject, seq) WHERE kind = 'run.outcome' "
    "-- note",
    "CREATE INDEX events_subject_outcome ON events(subject,seq) WHERE kind = 'run.outcome'",
    "CREATE INDEX events_subject_outcome ON events(subject,\u00a0seq) WHERE kind = "
    "'run.outcome'",
], ids=["literal", "space-in-literal", "columns", "comment", "token-joined", "no-break-space"])
def test_anything_but_whitespace_between_tokens_is_still_altered(altered: str,
                                                                 tmp_path: Path) -> None:
    SqliteJournal(tmp_path / "journal.sqlite").close()
    conn = author(tmp_path / "journal.sqlite")
    found = {row for row in conn.execute(MASTER_SQL) if row[1] != "events_subject_outcome"}
    conn.close()
    assert schema_problem(found | {("index", "events_subject_outcome", "events",
                                    FORMAT_8_INDEX.replace(" IF NOT EXISTS", ""))}) is None
    found.add(("index", "events_subject_outcome", "events", altered))
    assert schema_problem(found) == "the journal's index `events_subject_outcome` was altered"


#: ``head`` as this code writes it, and with its key made part of the column's type (a
#: rowid alias has no index of its own to miss)
HEAD = ("CREATE TABLE head (\n    one  INTEGER PRIMARY KEY CHECK (one = 1),\n"
        "    seq  INTEGER NOT NULL,\n    hash TEXT NOT NULL\n)")
NO_KEY = HEAD.replace("INTEGER PRIMARY", "INTEGER\u00a0PRIMARY")


def test_a_primary_key_read_as_a_type_name_is_altered(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite"
    with SqliteJournal(journal) as opened:
        opened.append([keyed_intent(1, "k")])
    conn = author(journal)
    assert conn.execute("SELECT sql FROM sqlite_master WHERE name = 'head'").fetchone()[0] \
        == HEAD
    row = conn.execute("SELECT one, seq, hash FROM head").fetchone()
    conn.execute("DROP TABLE head")
    conn.execute(NO_KEY)
    conn.execute("INSERT INTO head VALUES (?, ?, ?)", row)
    # what SQLite reads: no key — a second head row is taken
    conn.execute("INSERT INTO head VALUES (1, 0, 'x')")
    conn.execute("DELETE FROM head WHERE seq = 0")
    conn.close()
    # before: opened to write (its next append fails: `ON CONFLICT(one)` matches no key),
    # and audit verify said intact
    with pytest.raises(JournalError, match="`head` was altered"):
        SqliteJournal(journal).close()
    report = verify_journal(journal)
    assert not report.intact and "head" in str(report.reason), report.reason
