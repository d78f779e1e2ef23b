"""A journal on a folder the reader cannot write could not be read by ``runs list``.

Finding (review of the eighteenth round's own changes): the reading commands open the
journal ``mode=ro`` (``test_293``). A journal a runtime closed cleanly is in WAL mode with
no ``-wal`` or ``-shm`` beside it, and SQLite, to read a WAL-mode file, creates its
``-shm``. On a folder the reader may not write — the auditor's read-only mount of a handed
home, a backup snapshot, another user's home shared read only — every reading command
(``runs list``/``show``, ``tasks list``, ``graph rebuild``, ``replay``, ``journal copy``)
answered "cannot open the journal …: attempt to write a readonly database" (exit 2), while
``audit verify`` read the same file (``immutable``). The file could be verified but not
read.

Now, when such an open fails and there is no ``-wal`` and no ``-shm`` beside the file (no
writer has it open: a live WAL writer always has its ``-wal``; a crashed one left it), the
journal is read ``immutable``, as ``audit verify`` reads it. A ``-wal`` without a way to
read it is still refused.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg.storage import SqliteJournal
from tests.security.handed import HIDDEN, handed_home

pytestmark = pytest.mark.sqlite_only("the SQLite file's own side files")

_NOBODY = 65534


@pytest.fixture
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A handed journal, closed cleanly (WAL mode, no side files), alone in a folder
    everyone may read and no one but root may write (the folder is outside pytest's
    private temporary root, so that another user can reach it)."""
    home = handed_home(tmp_path_factory, "t302")
    folder = Path(tempfile.mkdtemp(prefix="cradle-t302-", dir="/tmp"))
    try:
        shutil.copyfile(home / "journal.sqlite", folder / "journal.sqlite")
        assert not list(folder.glob("journal.sqlite-*"))
        (folder / "journal.sqlite").chmod(0o444)
        folder.chmod(0o555)
        yield folder / "journal.sqlite"
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def _runs_as_reader(journal: Path) -> tuple[list[str], str]:
    """The runs the journal lists and what went wrong, read by a user who may not write
    its folder: this process when it is not root; else a child that becomes `nobody`
    (root writes any folder), with the modules already imported."""
    if os.geteuid() != 0:
        return _read(journal)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read_end)
            os.setgid(_NOBODY)
            os.setuid(_NOBODY)
            runs, error = _read(journal)
            os.write(write_end, f"{' '.join(runs)}\n{error}".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    runs, _, error = said.partition("\n")
    return runs.split(), error


def _read(journal: Path) -> tuple[list[str], str]:
    try:
        with SqliteJournal(journal, read_only=True) as j:
            return j.run_ids(), ""
    except Exception as exc:  # reported to the test, which names it
        return [], f"{type(exc).__name__}: {exc}"


def test_a_journal_on_a_folder_nobody_writes_is_read(shelf: Path) -> None:
    assert stat.S_IMODE(shelf.parent.stat().st_mode) == 0o555
    runs, error = _runs_as_reader(shelf)
    assert error == "", error  # before: attempt to write a readonly database
    assert HIDDEN in runs, runs
    assert not list(shelf.parent.glob("journal.sqlite-*"))  # nothing written beside it
