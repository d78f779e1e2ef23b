"""A reading command made the journal of a home that had none.

Finding (nineteenth round): ``runs list`` on a home with no journal says so and makes
nothing, but the commands that read through a runtime opened the home as a writer does.
Pointed at a folder holding a home's configuration and policies and no journal — a home
half copied, a ``--home`` naming the wrong folder — ``inbox`` or ``approvals list``
answered an empty list and left behind a new empty journal, a ``workers/`` folder and a
graph store (``graph/``, ``graph.lock``); pointed at a folder that does not exist, it made
the folder too.

Now such a home reads as one whose journal is empty — the same answers as before (an
empty inbox, no approval, no budget; an unknown run) — from an empty journal made
in a temporary folder and gone with the command; the folder is as it was (one that did
not exist still does not).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.demo.scenario import prepare_home
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli
from tests.security.handed import RUNTIME_READERS, home_files

pytestmark = pytest.mark.sqlite_only("the home's own journal file, which is not there")


@pytest.mark.parametrize("command", RUNTIME_READERS, ids=lambda c: " ".join(c[:2]))
def test_a_runtime_reader_makes_no_journal(tmp_path: Path, command: tuple[str, ...],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home, nowhere = tmp_path / "home", tmp_path / "nowhere"
    prepare_home(home)
    before = home_files(home)
    assert "journal.sqlite" not in before
    listing = command[-1] in ("inbox", "list", "status") and command[0] != "workflow"
    answers = []
    for folder in (home, nowhere):
        res = run_cli(*command, "--home", str(folder), *(["--format", "json"] * listing))
        assert "Traceback" not in res.stdout + res.stderr
        answers.append((res.returncode, res.stdout.strip()))
    # before: a journal, `workers/`, `graph/`, `graph.lock` and the missing folder made
    assert home_files(home) == before
    assert not nowhere.exists()
    if listing:  # nothing waits, nothing was spent: as in a home with an empty journal
        assert answers == [(0, "[]")] * 2
    else:  # an unknown run, approval, blob: as before
        assert [code for code, _ in answers] == [2, 2]
