"""Reading commands that open a runtime upgraded a handed journal in place.

Finding (review of the eighteenth round's own changes): ``test_293`` made the commands an
auditor runs on a handed home open its journal read only — ``runs list``/``show``,
``tasks list``, ``graph rebuild``, ``replay``, ``journal copy`` — so a journal of an older
format is refused, not upgraded. The other commands that only read, but read through a
runtime, were left as they were: ``workflow status`` (which the README gives for looking
at a cancelled run), ``approvals list``/``show``, ``inbox``, ``evidence show``, ``budgets
status``, ``autonomy status``. Handed a home whose journal says an older format (no
trigger in it: a runtime refuses one since ``test_293``), each upgraded the file in place
— the derived tables deleted and refilled, the format stamp rewritten, the file switched
to WAL — and then answered: the file handed over was no longer the one received.

Now those commands look at the home's embedded journal read only before their runtime
opens it: one of another format is refused in the same line as ``runs list`` gives
(exit 2), and its bytes are the same after.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.security.handed import RUNTIME_READERS, author, handed_home, refused_as_it_was

pytestmark = pytest.mark.sqlite_only("the SQLite file's own format")


@pytest.fixture
def older(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A handed home whose journal says format 11 (this runtime derives one more table
    from its events and rewrites the stamp) and holds no trigger, out of WAL."""
    home = handed_home(tmp_path_factory, "t301")
    conn = author(home / "journal.sqlite")
    conn.execute("DROP TABLE unrun_approvals")
    conn.execute("PRAGMA user_version = 11")
    conn.close()
    return home


@pytest.mark.parametrize("command", RUNTIME_READERS, ids=lambda c: " ".join(c[:2]))
def test_a_runtime_reader_leaves_an_older_journal_as_it_was(
        older: Path, command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    # before: the journal upgraded in place, then the command answered
    refused_as_it_was(older, command, format_said="format `11`")
