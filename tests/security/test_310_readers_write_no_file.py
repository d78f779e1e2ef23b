"""A reading command wrote a handed journal and the home around it.

Finding (nineteenth round): ``test_301`` refused a journal of an older format before a
runtime reader opened it, but one of this format was still opened by the whole runtime.
An auditor handed a home — its journal as its author left it, in SQLite's rollback mode,
and no graph store (copied without it) — ran ``workflow status``, ``approvals list``,
``inbox``, ``evidence show``, ``budgets status`` or ``autonomy status``, and each:
switched the journal to WAL (its header rewritten: the file handed over was no longer
the one received), took a worker's lease (a ``workers/`` folder made in the home), ran
the recovery pass and, at its close, built the home's graph store from the journal
(``graph/`` and ``graph.lock`` made and written).

Now they open the home read only: the journal ``mode=ro``, no lease, no recovery, no
graph store. Every file of the home is the same after, byte for byte, and no file is
added.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli
from tests.security.handed import RUNTIME_READERS, copied_home, home_files

pytestmark = pytest.mark.sqlite_only("the SQLite file's own bytes and its side files")


@pytest.fixture
def copied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A handed home copied without its graph store or leases, its journal in rollback
    mode as its author leaves it."""
    return copied_home(tmp_path_factory, "t310")


@pytest.mark.parametrize("command", RUNTIME_READERS, ids=lambda c: " ".join(c[:2]))
def test_a_runtime_reader_writes_nothing_in_the_home(
        copied: Path, command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    before = home_files(copied)
    assert "journal.sqlite-wal" not in before
    res = run_cli(*command, "--home", str(copied))
    assert "Traceback" not in res.stdout + res.stderr
    assert res.returncode in (0, 2), (res.stdout, res.stderr)
    # before: the journal switched to WAL, `workers/`, `graph/` and `graph.lock` made
    assert home_files(copied) == before
    assert not (copied / "journal.sqlite-shm").exists()
