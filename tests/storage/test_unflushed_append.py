"""``Journal.append(..., flush=False)`` — the observation's commit (issue 12): committed and
visible at once, chained like any other, kept when the writing process is killed; the
journal's own durability setting is in force for the next flushed append."""

from __future__ import annotations

import subprocess
import sys
import time
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


class _Syncs:
    """Records each fsync of the WAL with the journal's head as it was when the sync began
    (read through another connection) and the order of appends returning."""

    def __init__(self, journal: SqliteJournal, path: Path) -> None:
        self.log: list[tuple[str, int]] = []
        self._real = journal._sync_wal
        self._path = path
        journal._sync_wal = self  # type: ignore[method-assign]

    def __call__(self) -> bool:
        with SqliteJournal(self._path) as other:
            self.log.append(("sync", other.head()[0]))
        return self._real()


def test_a_flushed_append_returns_after_a_sync_that_covers_its_commit(tmp_path: Path) -> None:
    """Commits are made under synchronous=NORMAL; a flushed append returns only after an
    fsync of the WAL that began once its commit was written; an unflushed one does not
    wait, and is covered by the next flushed append's sync."""
    path = tmp_path / "j.sqlite"
    with SqliteJournal(path) as j:
        assert j._query("PRAGMA synchronous")[0][0] == 1  # NORMAL: the fsync is ours
        syncs = _Syncs(j, path)
        j.append([ev(1)], flush=False)
        j.append([ev(2)], flush=False)
        assert syncs.log == []  # nothing waited for the disk
        j.append([ev(3)])
        assert syncs.log == [("sync", 3)]  # one sync, after the third commit: covers all
        assert j._durable == j._committed == 3
        j.append([ev(4)])
        assert syncs.log == [("sync", 3), ("sync", 4)]
        assert [e.payload["i"] for e in j.events()] == [1, 2, 3, 4]
        assert j.verify().intact


def test_threads_appending_at_once_share_fsyncs_and_each_waits_for_its_own(
        tmp_path: Path) -> None:
    """Group commit within a process: a flushed append made while a sync is in flight
    waits for it and then for one that covers its own commit."""
    import threading

    path = tmp_path / "j.sqlite"
    with SqliteJournal(path) as j:
        real = j._sync_wal
        started: list[int] = []  # the commits counted when each sync began

        def slow_sync() -> bool:
            started.append(j._committed)
            time.sleep(0.05)  # a slow disk: appends pile up behind the sync in flight
            return real()

        j._sync_wal = slow_sync  # type: ignore[method-assign]
        returned: list[tuple[int, int]] = []  # (seq, commits covered when it returned)
        barrier = threading.Barrier(8)

        def writer(i: int) -> None:
            barrier.wait()
            seq = j.append([ev(i)])[0].seq
            returned.append((seq, j._durable))

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(returned) == 8
        assert all(durable >= seq for seq, durable in returned)  # none returned early
        assert len(started) < 8  # fewer fsyncs than flushed commits
        assert j.verify().intact


def test_a_failed_fsync_is_a_journal_error_and_the_next_flush_retries(tmp_path: Path) -> None:
    from cradle_kg.errors import JournalError

    with SqliteJournal(tmp_path / "j.sqlite") as j:
        real = j._sync_wal
        j._sync_wal = lambda: False  # type: ignore[method-assign]
        with pytest.raises(JournalError, match="not confirmed durable"):
            j.append([ev(1)])
        assert j.head()[0] == 1 and j._durable == 0  # committed, not confirmed
        j._sync_wal = real  # type: ignore[method-assign]
        j.append([ev(2)])
        assert j._durable == 2


def test_writers_queue_on_the_writer_file_and_a_read_only_folder_still_writes(
        tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with SqliteJournal(path) as j:
        j.append([ev(1)])
        assert (tmp_path / "j.sqlite-writer").exists()
    with SqliteJournal(path) as j:
        j._writer_fd = None
        j._writer_queue = lambda: None  # type: ignore[method-assign]  # cannot be made
        j.append([ev(2)])  # ordered by SQLite's busy handler alone
        assert j.head()[0] == 2 and j.verify().intact


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


def test_a_postgresql_append_flushes_after_its_commit_outside_the_lock(pg_url: str) -> None:
    """On PostgreSQL a durable append commits with ``synchronous_commit = off`` — the
    append lock, a transaction lock, is released at the commit, not after a WAL flush —
    then flushes in a transaction of its own (``FLUSH_SQL``) before it returns. An
    unflushed append does not flush."""
    from cradle_kg.storage.postgresql import FLUSH_SQL, PostgresJournal

    with PostgresJournal(pg_url) as j:
        # the tests' server does not sync its WAL (fsync=off): a flush waits for nothing,
        # so none is made apart; a server that syncs (a deployment's) makes one
        assert j._query("SHOW fsync")[0][0] == "off" and not j._flush_apart
        j._flush_apart = True
        sent: list[str] = []
        real = j._conn.execute

        def execute(query: str, *args: object, **kwargs: object) -> object:
            sent.append(str(query))
            return real(query, *args, **kwargs)  # type: ignore[arg-type]

        j._conn.execute = execute  # type: ignore[method-assign]
        j.append([ev(1)], flush=False)
        assert FLUSH_SQL not in sent
        j.append([ev(2)])
        assert sent.count(FLUSH_SQL) == 1
        assert [e.payload["i"] for e in j.events()] == [1, 2]
        assert j.verify().intact


def test_the_postgresql_flush_flushes_the_wal_written_before_it(pg_url: str) -> None:
    """``FLUSH_SQL`` flushes every WAL record written before it began — whoever wrote it —
    because it writes one of its own and its commit flushes up to that (a statement that
    writes none, ``SELECT pg_current_xact_id()``, flushed 0 times of 20 here)."""
    from cradle_kg.storage.postgresql import FLUSH_SQL, PostgresJournal

    with PostgresJournal(pg_url) as j:
        for i in range(5):
            j.append([ev(i)], flush=False)  # committed, not flushed
            (written,) = j._query("SELECT pg_current_wal_insert_lsn()::text")[0]
            j._conn.execute(FLUSH_SQL)
            (flushed,) = j._query("SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn",
                                  (written,))[0]
            assert flushed, i


def test_a_postgresql_server_that_syncs_its_wal_has_durable_appends_flushed_apart() -> None:
    """On a server that syncs its WAL (``fsync=on``, as deployed) a durable append commits
    without a flush under the lock and flushes apart; its events are all there, chained."""
    from cradle_kg.storage.pg_scratch import ScratchPostgres
    from cradle_kg.storage.postgresql import PostgresJournal

    server = ScratchPostgres(durable=True)
    try:
        with PostgresJournal(server.journal_schema()) as j:
            assert j._query("SHOW fsync")[0][0] == "on"
            assert j._flush_apart
            j.append([ev(1, "action.intent", key="k1")])
            j.append([ev(2)], flush=False)
            j.append([ev(3)])
            assert [e.payload["i"] for e in j.events()] == [1, 2, 3]
            assert j.verify().intact
    finally:
        server.stop()
