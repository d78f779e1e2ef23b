"""A journal of the previous release's format is read, as it is, by the commands that read.

Finding (the twenty-first round): a SQLite journal written by the previous release
(format 12, before format 13's partial index ``events_subject_decided``) handed to an
auditor was refused by every command that only reads — ``audit verify`` said BROKEN
("format `12`, not `13`: written by an older cradle-kg … or altered"), ``runs list``,
``inbox`` and the other readers "format `12`; … upgrade a copy" — until someone made an
upgraded copy. Those commands must not change the file (*Reading a home changes
nothing*), and format 12 differs from 13 by that one index alone, which only makes reads
faster.

Now a read-only open accepts format 12 as it is, the schema compared with format 13's
less that index, and says so in one warning line; each reader answers as it does on the
same journal upgraded, and the file is the same after, byte for byte. A writable open
still upgrades it in place. Older formats are refused as before (``test_293``,
``test_301``).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.storage import JOURNAL_FORMAT, verify_journal
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli
from tests.security.handed import (
    HIDDEN,
    RUNTIME_READERS,
    author,
    copied_home,
    digest,
    home_files,
)
from tests.security.homes import without_journal_url

pytestmark = pytest.mark.sqlite_only("the SQLite file's own format")

READERS = (*RUNTIME_READERS, ("runs", "list"), ("runs", "show", HIDDEN), ("tasks", "list"),
           ("audit", "verify"))
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same handed home twice, copied without its graph store or leases, its journal
    in rollback mode: of this format, and as the previous release left it (format 12)."""
    current = copied_home(tmp_path_factory, "t375")
    previous = current.parent / "previous"
    shutil.copytree(current, previous)
    conn = author(previous / "journal.sqlite")
    conn.execute("DROP INDEX events_subject_decided")
    conn.execute("DROP TABLE lineage_written")  # format 14's (test_496)
    conn.execute("PRAGMA user_version = 12")
    conn.close()
    return current, previous


@pytest.mark.parametrize("command", READERS, ids=lambda c: " ".join(c[:2]))
def test_a_reader_reads_format_12_as_it_is(
        homes: tuple[Path, Path], command: tuple[str, ...],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    current, previous = homes
    before = home_files(previous)
    expected = run_cli(*command, "--home", str(current))
    got = run_cli(*command, "--home", str(previous))
    # before: exit 2 "is format `12`" (audit verify: exit 1, BROKEN)
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout), \
        (got.stdout, got.stderr)
    assert got.stderr.replace(str(previous), str(current)) == expected.stderr
    assert home_files(previous) == before  # nothing written, nothing added


def test_audit_verify_says_intact_and_one_warning_line(homes: tuple[Path, Path]) -> None:
    _, previous = homes
    journal = previous / "journal.sqlite"
    before = digest(journal)
    report = verify_journal(journal)
    assert report.intact, report.reason
    for command in (("audit", "verify"), ("runs", "list")):
        done = subprocess.run([sys.executable, "-m", "cradle_kg", *command, "--home",
                               str(previous)], capture_output=True, text=True, timeout=300,
                              env={**without_journal_url(), "PYTHONPATH": str(ROOT)},
                              check=False)
        assert done.returncode == 0, done.stderr
        said = [line for line in done.stderr.splitlines() if "format `12`" in line]
        assert len(said) == 1, done.stderr
        assert "read as it is" in said[0] and "events_subject_decided" in said[0], said
    assert digest(journal) == before


def test_a_writable_open_still_upgrades_it(homes: tuple[Path, Path], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = tmp_path / "home"
    shutil.copytree(homes[1], home)
    with Runtime(home, graph_sync=False):
        pass
    conn = sqlite3.connect(home / "journal.sqlite")
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == JOURNAL_FORMAT == 14
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = "
                            "'events_subject_decided'").fetchone() == (1,)
    finally:
        conn.close()
    assert verify_journal(home / "journal.sqlite").intact


def test_format_12_with_anything_else_changed_is_still_refused(
        homes: tuple[Path, Path], tmp_path: Path) -> None:
    """Only the one index may be missing: format 12 holding format 13's index, or lacking
    another object, is not what the previous release wrote."""
    journal = tmp_path / "journal.sqlite"
    shutil.copy(homes[1] / "journal.sqlite", journal)
    conn = author(journal)
    conn.execute("DROP INDEX events_run")
    conn.close()
    report = verify_journal(journal)
    assert not report.intact and "events_run" in str(report.reason), report.reason
    shutil.copy(homes[0] / "journal.sqlite", journal)
    conn = author(journal)
    conn.execute("DROP TABLE lineage_written")  # format 14's: only the index is extra
    conn.execute("PRAGMA user_version = 12")
    conn.close()
    report = verify_journal(journal)
    assert not report.intact and "events_subject_decided" in str(report.reason), report.reason
