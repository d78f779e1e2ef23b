"""``Journal.append(..., flush=False)`` — the observation's commit (issue 12): committed and
visible at once, chained like any other, kept when the writing process is killed; the
journal's own durability setting is in force for the next flushed append."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cradle_kg.storage import Journal, NewEvent, SqliteJournal, open_journal

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def ev(i: int, kind: str = "note", key: str | None = None) -> NewEvent:
    return NewEvent(run_id="run:a", kind=kind, subject=f"s:{i}", actor="agent:a", at=T0,
                    payload={"i": i}, idem_key=key)


def test_an_unflushed_append_is_committed_visible_and_chained(journal: Journal,
                                                              target: str) -> None:
    journal.append([ev(1, "action.intent", key="k1")])
    written = journal.append([ev(2)], flush=False)
    with open_journal(target) as other:  # another connection sees it at once
        assert other.head() == (2, written[0].hash)
    last = journal.append([ev(3)])
    assert last[0].prev_hash == written[0].hash
    assert journal.verify().intact


def test_an_unflushed_append_is_still_all_or_none(journal: Journal) -> None:
    from cradle_kg.storage import IdempotencyKeyTaken

    journal.append([ev(1, "action.intent", key="k1")])
    head = journal.head()
    with pytest.raises(IdempotencyKeyTaken):
        journal.append([ev(2), ev(3, "action.intent", key="k1")], flush=False)
    assert journal.head() == head


def test_sqlite_commits_each_append_under_the_mode_it_asked_for(tmp_path: Path) -> None:
    """The mode is switched only when it changes (a run of deferred reads keeps NORMAL),
    and a flushed append after unflushed ones commits under FULL again."""
    with SqliteJournal(tmp_path / "j.sqlite") as j:
        assert j._query("PRAGMA synchronous")[0][0] == 2  # FULL, as opened
        j.append([ev(1)], flush=False)
        j.append([ev(2)], flush=False)
        assert j._query("PRAGMA synchronous")[0][0] == 1  # NORMAL
        j.append([ev(3)])
        assert j._query("PRAGMA synchronous")[0][0] == 2  # FULL
        assert [e.payload["i"] for e in j.events()] == [1, 2, 3]
        assert j.verify().intact


KILLED_WRITER = """
import os, signal, sys
from datetime import UTC, datetime
from cradle_kg.storage import NewEvent, open_journal
j = open_journal(sys.argv[1])
e = lambda i: NewEvent(run_id="run:a", kind="note", subject=f"s:{i}", actor="a",
                       at=datetime(2026, 1, 1, tzinfo=UTC), payload={"i": i})
j.append([e(1)])
j.append([e(2)], flush=False)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_an_unflushed_append_survives_the_death_of_its_process(target: str) -> None:
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, target], check=False,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    with open_journal(target) as j:
        assert [e.payload["i"] for e in j.events()] == [1, 2]
        assert j.verify().intact
