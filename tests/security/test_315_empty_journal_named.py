"""A journal file that holds no journal, read by a command that only reads.

Finding (the nineteenth round's review): a 0-byte ``journal.sqlite`` (a copy cut short, a
``touch``) or a SQLite database of something else in its place was refused by ``runs
list``, ``inbox`` and the other reading commands as "format `1`" with the hint to upgrade
a copy — an upgrade that would make an empty journal of it. Nothing was written, but the
line sent the reader the wrong way.

Now it is named for what it is: no ``events`` table, so not a journal of any format
(``audit verify`` already said "a 0-byte file: it holds no events").
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.inprocess import run_cli

from .inputcli import fresh_home

pytestmark = pytest.mark.sqlite_only("about the embedded journal's file")


def _replaced(tmp_path: Path, how: str) -> Path:
    home = fresh_home(tmp_path / "home")
    journal = home / "journal.sqlite"
    for side in (journal, Path(f"{journal}-wal"), Path(f"{journal}-shm")):
        side.unlink(missing_ok=True)
    if how == "empty":
        journal.write_bytes(b"")
    else:
        with sqlite3.connect(journal) as conn:
            conn.execute("CREATE TABLE notes (text TEXT)")
        conn.close()
    return home


@pytest.mark.parametrize("how", ["empty", "another database"])
@pytest.mark.parametrize("command", [("runs", "list"), ("inbox",), ("approvals", "list")])
def test_a_file_without_a_journal_is_named_so(tmp_path: Path, how: str,
                                               command: tuple[str, ...]) -> None:
    home = _replaced(tmp_path, how)
    before = (home / "journal.sqlite").read_bytes()
    done = run_cli(*command, "--home", str(home))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "holds no journal" in done.stderr and "format `1`" not in done.stderr, done.stderr
    assert (home / "journal.sqlite").read_bytes() == before
