"""A journal of a format this cradle-kg refuses is refused before a byte of it is written.

Finding (the twenty-sixth review: the upgrade path): a runtime opening a SQLite journal of
a format it does not write — a newer release's (format 15), or format 1 (an older
cradle-kg's, whose event hash left out ``idem_key``) — refused it ("is format `15`; this
cradle-kg reads and writes format `14`"), but only after it had switched the file to WAL:
the journal's header rewritten, a ``-wal`` and ``-shm`` made beside it. A newer release's
file opened by an older worker left on a host, or a journal handed over, was no longer
the file it was, though nothing was said to be written.

Now the format is read before anything else is done to the file (the same check the
opening's transaction makes again): refused, its bytes the same, nothing made beside it.
An older format this code upgrades is upgraded as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.errors import JournalError
from cradle_kg.storage import JOURNAL_FORMAT
from cradle_kg.storage.sqlite import SqliteJournal
from tests.security.handed import author, home_files, keyed_intent

pytestmark = pytest.mark.sqlite_only("the SQLite file's own format and bytes")


def _journal(folder: Path, version: int) -> Path:
    """A journal of two events, stamped ``version``, as its writer left it: in rollback
    mode, every byte in the one file."""
    path = folder / "journal.sqlite"
    with SqliteJournal(path) as journal:
        journal.append([keyed_intent(1, "a")])
        journal.append([keyed_intent(2, "b")])
    conn = author(path)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()
    return path


@pytest.mark.parametrize("version", [JOURNAL_FORMAT + 1, 0], ids=["newer", "format-1"])
def test_a_refused_format_is_left_as_it_was(tmp_path: Path, version: int) -> None:
    path = _journal(tmp_path, version)
    before = home_files(tmp_path)
    with pytest.raises(JournalError) as refused:
        SqliteJournal(path)
    assert f"format `{version or 1}`" in refused.value.message
    # before: the file switched to WAL (its header rewritten), a -wal made beside it
    assert home_files(tmp_path) == before


def test_an_upgradable_format_is_still_upgraded(tmp_path: Path) -> None:
    path = _journal(tmp_path, JOURNAL_FORMAT - 1)
    with SqliteJournal(path) as journal:
        assert journal.verify().intact
        assert [e.seq for e in journal.events()] == [1, 2]
    conn = author(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == JOURNAL_FORMAT
    conn.close()
