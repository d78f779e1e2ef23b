"""The SQLite journal's WAL is copied back by a thread of the appending process, not inside
an append (issue 17: the checkpoint was the 1 M-event tail): the WAL stays bounded under a
steady load, nothing is lost or reordered, readers on old snapshots hold it back without
harm, ``close`` leaves nothing uncopied, and several processes share the work."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

import cradle_kg.storage.sqlite as sqlite_journal
from cradle_kg.storage import NewEvent, SqliteJournal
from tests.racers import ForkedPython

pytestmark = pytest.mark.sqlite_only("the checkpoint of SQLite's WAL file")

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PAD = "x" * 3000  # about a page of payload: a commit writes a few pages


def ev(i: int, key: str | None = None) -> NewEvent:
    return NewEvent(run_id=f"run:{i % 7}", kind="action.intent" if key else "note",
                    subject=f"s:{i * 7919 % 10007}", actor="agent:a", at=T0,
                    payload={"i": i, "pad": PAD}, idem_key=key)


def _pages(path: Path) -> int:
    """How long the WAL file is, in pages (its largest, never shrunk: restarts reuse it)."""
    wal = Path(f"{path}-wal")
    return wal.stat().st_size // 4096 if wal.exists() else 0


def _in_use(path: Path) -> int:
    """How many frames the WAL holds now (from its start, or from where it was last
    started over), as a checkpoint from another connection reports them."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        return int(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
    finally:
        conn.close()


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thresholds small enough for a test: a pass every 8 commits, restart at 64 pages."""
    monkeypatch.setattr(sqlite_journal, "CHECKPOINT_COMMITS", 8)
    monkeypatch.setattr(sqlite_journal, "RESTART_PAGES", 64)


def test_an_append_does_not_checkpoint_the_wal_itself(tmp_path: Path) -> None:
    with SqliteJournal(tmp_path / "j.sqlite") as j:
        assert j._query("PRAGMA wal_autocheckpoint")[0][0] == sqlite_journal.BACKSTOP_PAGES
        assert sqlite_journal.BACKSTOP_PAGES > sqlite_journal.RESTART_PAGES


def test_the_thread_keeps_the_wal_short_under_a_steady_load(tmp_path: Path,
                                                            small: None) -> None:
    path = tmp_path / "j.sqlite"
    with SqliteJournal(path) as j:
        for i in range(400):
            j.append([ev(i, key=f"k{i}"), ev(i)], flush=i % 5 == 0)
        assert j._checkpointer is not None and j._checkpointer.is_alive()
        longest = _pages(path)
        assert j.verify().intact
    # never started over, this WAL reaches ~6,300 pages (400 commits of ~16 pages)
    assert longest < 1600, longest
    assert not any(t.name.startswith("journal-checkpoint") for t in threading.enumerate())


def test_a_reader_on_an_old_snapshot_holds_the_wal_back_and_loses_nothing(
        tmp_path: Path, small: None) -> None:
    path = tmp_path / "j.sqlite"
    with SqliteJournal(path) as j:
        j.append([ev(0)])
        reader = sqlite3.connect(str(path), isolation_level=None)
        reader.execute("BEGIN")
        assert reader.execute("SELECT COUNT(*) FROM events").fetchone() == (1,)
        for i in range(1, 200):
            j.append([ev(i)], flush=False)
        # the reader still sees its snapshot; the writer went on
        assert reader.execute("SELECT COUNT(*) FROM events").fetchone() == (1,)
        held = _pages(path)
        reader.execute("COMMIT")
        reader.close()
        # started over once the reader let go (never started over, 400 more commits would
        # hold ~5,000 pages). The thread runs when it is scheduled: on a loaded machine the
        # appends may outrun it, so they go on in rounds, with a pause between, until it
        # has (bounded: 60 s, 4,000 commits), rather than betting on its timing
        i, deadline, seen = 200, time.monotonic() + 60, []
        while i < 600 or (seen[-1] >= held and i < 4000 and time.monotonic() < deadline):
            for _ in range(40):
                j.append([ev(i)], flush=False)
                i += 1
            if i >= 600:
                seen.append(_in_use(path))
                time.sleep(0.01)
        assert seen[-1] < held, (held, seen)
        assert [e.payload["i"] for e in j.events()] == list(range(i))
        assert j.verify().intact


def test_close_copies_what_the_thread_had_not(tmp_path: Path) -> None:
    """Three commits (no pass of the thread), another connection open (so SQLite's own
    last-close checkpoint does not run): the database file alone holds them after close."""
    path = tmp_path / "j.sqlite"
    keeper = None
    with SqliteJournal(path) as j:
        keeper = sqlite3.connect(str(path))
        keeper.execute("SELECT 1 FROM events LIMIT 1").fetchall()
        for i in range(3):
            j.append([ev(i)], flush=False)
        assert j._checkpointer is None
    assert Path(f"{path}-wal").exists()  # the keeper holds the WAL open
    alone = tmp_path / "alone.sqlite"
    alone.write_bytes(path.read_bytes())  # the main file only, no WAL beside it
    keeper.close()
    conn = sqlite3.connect(str(alone))
    try:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone() == (3,)
    finally:
        conn.close()


def test_checkpoints_do_not_look_like_another_writer(tmp_path: Path, small: None) -> None:
    """The thread's passes are not commits: the journal's watermark (``data_version``)
    moves only for other writers, as before."""
    with SqliteJournal(tmp_path / "j.sqlite") as j:
        mark = j.watermark()
        for i in range(100):
            j.append([ev(i)])
        assert j.watermark() == mark


_WRITER = """
import sys
from datetime import UTC, datetime
import cradle_kg.storage.sqlite as m
from cradle_kg.storage import NewEvent, SqliteJournal
m.CHECKPOINT_COMMITS, m.RESTART_PAGES = 8, 64
who = sys.argv[2]
with SqliteJournal(m.Path(sys.argv[1])) as j:
    for i in range(300):
        j.append([NewEvent(run_id=f"run:{who}", kind="action.intent", subject=f"s:{who}:{i}",
                           actor="agent:a", at=datetime(2026, 1, 1, tzinfo=UTC),
                           payload={"i": i, "pad": "x" * 3000}, idem_key=f"{who}:{i}")],
                 flush=i % 3 == 0)
"""


def test_writer_processes_share_the_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with SqliteJournal(path) as j:
        j.append([ev(0)])
        # processes of their own, forked from the fork server (no interpreter start each)
        procs = [ForkedPython(_WRITER, [str(path), who], env=os.environ, cwd=os.getcwd())
                 for who in ("a", "b", "c")]
        outputs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], outputs
        longest = _pages(path)
        assert j.head()[0] == 901
        assert j.verify().intact
        by = {w: [e.payload["i"] for e in j.events() if e.run_id == f"run:{w}"]
              for w in "abc"}
        assert by == {w: list(range(300)) for w in "abc"}
    # never started over: ~12,000 pages (900 commits of ~13 pages)
    assert longest < 2000, longest
