"""The journal: an append-only, hash-chained event log in SQLite (WAL).

The journal is the single source of truth. Every event row carries its kind, subject,
actor, time, canonical-JSON payload, ``payload_hash``, ``prev_hash`` and its own
``hash``; the ``head`` row is updated in the same transaction, so deleting the last
event is caught as surely as editing one in the middle.

Durability: a flushed :meth:`Journal.append` returns only once its commit is on disk,
which is what lets the runtime write an intent *before* the side effect it announces.
The commit itself is made under ``synchronous=NORMAL`` (the WAL written, not synced) and
the WAL file is then fsynced *after* the write lock is released — a group commit: one
fsync makes every commit written before it durable, this process's other threads' and
other processes' alike, and while one writer waits for the disk the next one commits. A
crash before the fsync loses no acknowledged commit (none was acknowledged yet), and the
WAL is replayed in order up to its first incomplete frame, so a later commit cannot
outlive an earlier one. (``synchronous=FULL``, used before, syncs inside the write lock:
every writer queued behind every other writer's fsync.)

A commit made with ``flush=False`` (an observation, a read's one transaction) does not
wait for the disk: it is in the WAL, kept if the process dies, and flushed by the next
flushed commit's fsync or, at the latest, :attr:`SqliteJournal.flush_window` seconds
later by a timer that syncs the WAL file (PostgreSQL's ``synchronous_commit = off``
pattern, whose window is the server's WAL writer).

Checkpoints: SQLite copies the WAL back into the database file at the commit that takes
the WAL past 1,000 pages, inside that commit; in a big journal the pages an append touches
are scattered (random idempotency keys and subjects), and that commit waited for the copy
and for the database file's fsync (durable appends of two events on a 400 k-event journal:
p99 21 ms, twice the p99 with the copy elsewhere). Here a thread of the process that
appends copies it instead, on a connection of its own, every :data:`CHECKPOINT_COMMITS`
commits: passes that take no lock (appends go on; each copies what was committed before
it began), and, once the WAL is :data:`RESTART_PAGES` long, a last short pass inside the
writers' queue, so that the WAL is wholly copied and the next append starts it over (a
WAL that is never wholly copied when an append begins is never started over, and grows:
a background checkpoint that took no lock grew it to 380 MB under a steady load).
SQLite's own checkpoint stays as a backstop at :data:`BACKSTOP_PAGES` pages, and ``close``
copies what this connection wrote since the thread's last pass (a process that appends a
few times and exits leaves no WAL behind it).

Concurrency: appends run under ``BEGIN IMMEDIATE`` (one writer at a time, across
threads and processes). This package's writers queue for it on an ``flock`` of
``<journal>-writer`` first, which the kernel hands on the moment it is released; SQLite's
own busy handler, still there for any other writer, sleeps 1 to 100 ms between tries,
which was most of the tail with several writer processes. An intent event claims its
idempotency key through a UNIQUE index, so two submissions of one key cannot both get
past the intent.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..canonical import iso, parse_iso
from ..errors import JournalError
from ..records import AuditEvent, built_event
from . import run_state_sql, tasks_sql
from . import sqlite_derived as derived
from .chain import (
    GENESIS_HASH,
    JOURNAL_FORMAT,
    READ_AS_IS_FORMATS,
    SCHEMA_STATEMENTS,
    UPGRADABLE_FORMATS,
    Anchor,
    ChainReport,
    Progress,
    event_hash,
)
from .counting import (
    APPROVAL_REQUEST_SQL,
    APPROVAL_SUBJECTS_SQL,
    RECENT_SIZES_SQL,
    RUN_BEGUN_SQL,
    RUN_ENDED_SQL,
    SUBJECT_LAST_SQL,
    KnownRuns,
    count_run,
    events_for_subject_sql,
    head_sql,
    last_for_subject_sql,
    prefixed,
    recent_size,
    settled_intents,
    subject_events_sql,
    window_usage,
    windowed,
)
from .digest_check import stored_key_problem
from .file_lease import WorkerLease, exclusive_file, worker_alive
from .journal import (
    BEGINNING,
    DIGEST_KEY_BYTES,
    DIGEST_KEY_NAME,
    FIRST_HASH_SQL,
    WRITTEN_CHUNK,
    ApprovalGuard,
    ApprovalMoved,
    Encoded,
    IdempotencyKeyTaken,
    LimitReached,
    NewEvent,
    RunEnded,
    RunNotNew,
    SubjectMoved,
    UploadsReached,
    WaitingReached,
    append_approvals,
    append_caps,
    append_uploads,
    append_waiting,
    begun_run,
    breached_cap,
    encode,
    ended_run,
    guard_probe,
    moved_approval,
    moved_subject,
    new_runs,
    open_runs,
    read_only_error,
    written_values,
)
from .run_state_sql import StateKey
from .sqlite_keys import key_index_problem
from .sqlite_verify import MASTER_SQL, read_as_is, schema_problem, verify_journal
from .sqlite_watch import HEAD_SQL
from .tasks_sql import Decider, KeyAsked
from .wal_sync import sync_wal

#: the default of :attr:`SqliteJournal.flush_window`, in seconds
DEFERRED_FLUSH_SECONDS = 0.2
#: how long opening a journal waits for other processes that hold it locked, in seconds
OPEN_BUSY_SECONDS = 30.0
#: how often :meth:`SqliteJournal.wait_for_change` reads ``PRAGMA data_version``
CHANGE_POLL_SECONDS = 0.02
#: commits of one journal connection between two passes of its checkpoint thread
CHECKPOINT_COMMITS = 64
#: passes without a lock follow each other while this process committed during the last
#: one, up to this many
UNLOCKED_PASSES = 4
#: a WAL this long (pages; 16 MB) is copied to its end by a last pass inside the writers'
#: queue, so that the next append starts it over
RESTART_PAGES = 4096
#: SQLite's own checkpoint, inside a commit, once the WAL is this long (64 MB): a backstop
#: for a checkpoint thread that cannot keep up (SQLite's default is 1,000)
BACKSTOP_PAGES = 16_384


def _busy(exc: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


#: a proposal's last outcome in a run (an identical proposal submitted again is answered
#: from it): the expression is the index ``events_outcome``'s, word for word
LATEST_OUTCOME_SQL = (
    "SELECT {cols} FROM events WHERE run_id = ? AND kind = 'run.outcome' "
    "AND json_extract(payload, '$.outcome.proposal_id') = ? "
    "AND json_extract(payload, '$.submission') IS NULL ORDER BY seq DESC LIMIT 1")


#: SQLITE_READONLY, SQLITE_CANTOPEN: what a ``mode=ro`` read of a WAL-mode file answers
#: when its ``-shm`` cannot be made
_NO_SIDE_FILE = (8, 14)
_log = logging.getLogger(__name__)


def _read_only_settings(conn: sqlite3.Connection) -> sqlite3.Connection:
    conn.execute("PRAGMA query_only=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def _readable(conn: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    """``conn`` (``mode=ro``), once it has read the file; or, when it cannot because its
    ``-shm`` cannot be made (a WAL-mode journal closed cleanly, on a folder this process
    may not write) and no ``-wal`` or ``-shm`` is beside it, a connection that reads it
    ``immutable``, as ``audit verify`` does: no writer has the file open (a live WAL writer
    always has its ``-wal``), so there is nothing but the file to read. Before, every
    reading command refused such a journal (``tests/security/test_302``)."""
    _read_only_settings(conn)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError as exc:
        # only a file SQLite may not write beside (SQLITE_READONLY, SQLITE_CANTOPEN): never
        # a lock (a rollback-mode writer at work), never a WAL someone may be writing
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF not in _NO_SIDE_FILE or any(
                Path(f"{path}{side}").exists() for side in ("-wal", "-shm")):
            raise
    conn.close()
    return _read_only_settings(sqlite3.connect(
        f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1", uri=True,
        timeout=OPEN_BUSY_SECONDS, isolation_level=None, check_same_thread=False))


class SqliteJournal:
    """One journal file. Safe to share between threads; several processes may open it."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        #: opened read only (``mode=ro``): a command that only reads — never upgraded,
        #: switched to WAL or written (``tests/security/test_293``)
        self.read_only = read_only
        #: the longest an unflushed commit waits for its flush, in seconds
        self.flush_window = DEFERRED_FLUSH_SECONDS
        #: commits made on this connection, and how many of them are known to be on disk
        #: (:meth:`_flush_through`); a sync in flight, and the condition its waiters use
        self._committed = 0
        self._durable = 0
        self._syncing = False
        self._synced = threading.Condition(threading.Lock())
        #: the writers' queue (``<journal>-writer``), opened at the first append
        self._writer_fd: int | None = None
        self._writer_pid = 0
        #: the WAL file whose folder entry was synced (:meth:`_sync_wal`)
        self._wal_inode: int | None = None
        #: the runs whose ``runs`` row this connection committed (an append of theirs
        #: that counts no proposal writes none)
        self._runs = KnownRuns()
        #: the flusher thread (started by the first unflushed commit) and its signals
        self._flusher: threading.Thread | None = None
        self._dirty = threading.Event()
        self._closing = threading.Event()
        #: the checkpoint thread (started by the CHECKPOINT_COMMITS-th commit), its wake-up,
        #: and the commit count when its last pass began (:meth:`_checkpoint`)
        self._checkpointer: threading.Thread | None = None
        self._checkpointer_pid = 0
        self._checkpoint_due = threading.Event()
        self._checkpointed = 0
        try:
            if read_only:
                self._conn = sqlite3.connect(
                    f"file:{quote(str(path.resolve()))}?mode=ro", uri=True,
                    timeout=OPEN_BUSY_SECONDS, isolation_level=None, check_same_thread=False)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._conn = sqlite3.connect(
                    str(path), timeout=OPEN_BUSY_SECONDS, isolation_level=None,
                    check_same_thread=False)
        except (sqlite3.Error, OSError) as exc:
            raise JournalError(f"cannot open the journal `{path}`: {exc}") from exc
        try:
            if read_only:  # nothing is written: no trigger fires
                self._conn = _readable(self._conn, path)
                self._check_format()
                self._check_schema()
            else:
                self._refuse_foreign_sql()
                current = self._conn.execute("PRAGMA user_version").fetchone()[0] \
                    == JOURNAL_FORMAT
                if current:
                    self._check_schema(missing=False)  # before a byte is written (test_352)
                    self._check_keys()  # the unique indexes' b-trees too (test_374)
                else:  # a format refused: before a byte is written (test_561)
                    self._refuse_format()
                self._enter_wal()
                # commits write the WAL; a flushed append fsyncs it after the lock (above)
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute("PRAGMA busy_timeout=30000")
                self._conn.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
                self._create_schema()
                if not current:  # upgraded by another process meanwhile: probed here too
                    self._check_keys()
        except sqlite3.Error as exc:
            self._conn.close()
            raise JournalError(f"cannot open the journal `{path}`: {exc}") from exc
        except JournalError:
            self._conn.close()
            raise
        self._lock = threading.RLock()
        #: the ``data_version`` wait_for_change last reported (None: not called yet)
        self._change_seen: int | None = None
        #: the digest key, once read (:meth:`digest_key`)
        self._digest_key: bytes | None = None

    def _refuse_foreign_sql(self) -> None:
        """A journal this runtime writes holds no trigger and no view: one that does was
        written by something else, and its SQL would run with our writes — an upgrade
        refills the derived tables, every append inserts (``tests/security/test_293``)."""
        row = self._conn.execute(
            "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view') "
            "ORDER BY type, name LIMIT 1").fetchone()
        if row is not None:
            raise JournalError(
                f"the journal `{self.path}` holds a {row[0]} `{row[1]}`: a journal this "
                "cradle-kg writes holds none; it was not opened (its SQL would run with "
                "every write)", hint="`cradle-kg audit verify` says what else is not the "
                "journal's")

    def _check_schema(self, *, missing: bool = True) -> None:
        """The journal's schema must be the one this code writes, object for object, as
        ``audit verify`` reads it: an index made plain (``events_idem_key``: a key claimed
        twice) or a table redefined, which the opening's ``CREATE … IF NOT EXISTS`` left
        as it was, is refused to write (``tests/security/test_352``); read with a warning.
        ``missing`` False: before the opening creates what is missing, only what is there
        is checked."""
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        problem = schema_problem(set(self._conn.execute(MASTER_SQL)), missing=missing,
                                 version=version if self.read_only else JOURNAL_FORMAT)
        if problem is None:
            return
        error = JournalError(
            f"the journal `{self.path}`: {problem} (not the schema cradle-kg writes); "
            + ("it is read; opened to write, it would be refused" if self.read_only else
               "it was not opened to write"),
            hint="`cradle-kg audit verify` names each difference; a journal you were handed: "
                 "the commands that only read open it read only")
        if not self.read_only:
            raise error
        _log.warning("%s", error.message)

    def _check_keys(self) -> None:
        """Each unique index holds the newest and oldest rows of its table (a bounded
        probe, :mod:`.sqlite_keys`): one whose ``rootpage`` was pointed at another
        b-tree is refused to write, before a byte is written (``tests/security/test_374``)."""
        problem = key_index_problem(self._conn)
        if problem is not None:
            raise JournalError(
                f"the journal `{self.path}`: {problem}; it was not opened to write",
                hint="`cradle-kg audit verify` checks every index against its table; a "
                     "journal you were handed: the commands that only read open it read only")

    def _check_format(self) -> None:
        """Read only: the journal must be this code's format (an upgrade writes), or one
        read as it is (:data:`.chain.READ_AS_IS_FORMATS`: the previous release's)."""
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0 and self._conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'"
                ).fetchone() is None:  # format 1 has its events table (tests/security/test_315)
            raise JournalError(
                f"the journal `{self.path}` holds no journal: no `events` table (an empty "
                "file, or a database of something else)",
                hint="check the path, or the copy you were handed; `cradle-kg audit verify` "
                     "says the same")
        if version in READ_AS_IS_FORMATS:  # the previous release's: read, never upgraded
            read_as_is(self.path, version)
            return
        if version != JOURNAL_FORMAT:
            raise JournalError(
                f"the journal `{self.path}` is format `{version or 1}`; a command that only "
                f"reads opens it read only and reads format `{JOURNAL_FORMAT}` (and "
                f"`{'`, `'.join(map(str, sorted(READ_AS_IS_FORMATS)))}` as it is)",
                hint="a runtime of this cradle-kg that opens it upgrades it in place (same "
                     "events, same hashes): a journal you were handed, upgrade a copy")

    def _enter_wal(self) -> None:
        """Put the file in WAL mode, once: a journal already in WAL is left as it is (the
        query form reads the header under a shared lock). Converting a brand-new file takes
        an exclusive lock, and when several processes open the same new journal at once
        SQLite answers ``database is locked`` at once to all but one, without waiting (the
        busy handler is skipped to avoid a deadlock): retried here, with a jittered pause,
        until the connection's 30 s busy timeout has passed."""
        deadline = time.monotonic() + OPEN_BUSY_SECONDS
        pause = 0.005
        while True:
            try:
                mode = self._conn.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":
                    self._conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause * (0.5 + random.random()))
            pause = min(pause * 2, 0.25)

    def _refuse_format(self) -> int:
        """The file's format, refused unless this code writes or upgrades it (a new file,
        no events yet, is made a journal): read before the opening writes anything, the
        switch to WAL included, and again in its transaction (``tests/security/test_561``)."""
        conn = self._conn
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version == JOURNAL_FORMAT or version in UPGRADABLE_FORMATS:
            return version
        has_events = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'"
        ).fetchone() is not None and conn.execute(
            "SELECT 1 FROM events LIMIT 1").fetchone() is not None
        if has_events or version != 0:
            raise JournalError(
                f"the journal `{self.path}` is format `{version or 1}`; this cradle-kg "
                f"reads and writes format `{JOURNAL_FORMAT}`",
                hint="format 1 (an older cradle-kg, whose event hash left out `idem_key`) "
                     "cannot be extended: start a new home")
        return version

    def _create_schema(self) -> None:
        """Create the tables of a new journal and stamp its format; refuse another format."""
        conn = self._conn
        if conn.execute("PRAGMA user_version").fetchone()[0] == JOURNAL_FORMAT:
            for statement in SCHEMA_STATEMENTS:  # IF NOT EXISTS: no write lock when present
                conn.execute(statement)
            self._check_schema()
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._refuse_format()  # again, under the write lock
            upgrade = version in UPGRADABLE_FORMATS
            if upgrade and version < 6:  # 4's usage had no running totals, 5's no budget spend
                conn.execute("DROP TABLE IF EXISTS usage")
            held = {row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            for statement in SCHEMA_STATEMENTS:
                conn.execute(statement)
            # same events, same hashes: derive from them every table before format 6, and
            # from 6 on every derived table the file did not hold (format 6's ``usage``
            # kept: dropped, it came back empty, the rate and budget counts lost). Not the
            # tables later formats added alone: format 7 gained ``undecided_approvals``,
            # ``open_steps`` and ``budget_sets`` after its first release, still stamped 7,
            # and a file of that release got them empty — its budgets gone, its waiting
            # approvals no longer waiting (tests/security/test_564)
            if upgrade:
                derived.rebuild(conn, None if version < 6 else tuple(
                    d.table for d in derived.DERIVATIONS if d.table not in held))
            if version != JOURNAL_FORMAT:
                conn.execute(f"PRAGMA user_version = {JOURNAL_FORMAT}")
            # created or upgraded: the schema and the unique indexes' b-trees checked
            # before it commits, a refused one rolled back (tests/security/test_563)
            self._check_schema()
            self._check_keys()
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._closing.set()
        self._dirty.set()
        self._checkpoint_due.set()
        thread = self._checkpointer
        if thread is not None and self._checkpointer_pid == os.getpid():
            thread.join()
        with self._lock:
            self._flush_through(self._committed)
            if self._committed > self._checkpointed:
                self._checkpointed = self._committed
                with contextlib.suppress(sqlite3.Error):  # what is left, the next one copies
                    self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._conn.close()
            if self._writer_fd is not None:
                os.close(self._writer_fd)
                self._writer_fd = None

    @property
    def location(self) -> str:
        return str(self.path)

    def __enter__(self) -> SqliteJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ------------------------------------------------------------------

    def append(self, events: Sequence[NewEvent], *, flush: bool = True) -> list[AuditEvent]:
        """Append events atomically and durably; all or none are written.

        Raises :class:`IdempotencyKeyTaken` (and writes nothing) when an intent's key is
        already claimed, :class:`LimitReached` when an intent's cap would be exceeded,
        :class:`SubjectMoved` when an ``if_last`` event's subject moved on,
        :class:`RunNotNew` when an ``if_new_run`` event's run has begun,
        :class:`RunEnded` when an ``if_run_open`` event's workflow run has ended. Returns once
        the commit is on disk (the WAL fsynced after the
        write lock is released: see the module's doc); ``flush=False`` returns once it is
        committed: in the WAL, kept if the process dies, synced by the next flushed commit
        or by the flusher thread within :attr:`flush_window`; a power loss before that may
        drop it, never corrupt. A commit whose fsync fails raises :class:`JournalError`:
        it is in the journal, but was not confirmed on disk.
        """
        if not events:
            return []
        if self.read_only:  # before the writers' queue file is made, or a lock is taken
            raise read_only_error(f"the journal `{self.path}`")
        with self._lock:
            written = self._append(events)
            self._committed += 1
            mark = self._committed
            if mark - self._checkpointed >= CHECKPOINT_COMMITS:
                self._wake_checkpointer()
            if not flush:
                if self._flusher is None:
                    self._flusher = threading.Thread(
                        target=self._flush_loop, args=(weakref.ref(self), self._dirty,
                                                       self._closing),
                        daemon=True, name=f"journal-flush:{self.path.name}")
                    self._flusher.start()
                self._dirty.set()
                return written
        if not self._flush_through(mark):
            raise JournalError(
                f"the journal `{self.path}` could not be synced to disk: the events up to "
                f"seq {written[-1].seq} are committed but were not confirmed durable",
                hint="check the disk; the next flushed append or `close` syncs again")
        return written

    @staticmethod
    def _flush_loop(ref: weakref.ref[SqliteJournal], dirty: threading.Event,
                    closing: threading.Event) -> None:
        """Within :attr:`flush_window` of an unflushed commit, sync the WAL unless a flushed
        append's sync did in the meantime (one wake-up per window at most, whatever the rate).
        Holds the journal weakly: one that is dropped without ``close`` is not kept alive."""
        while not closing.is_set():
            if not dirty.wait(5.0):
                if ref() is None:
                    return
                continue
            journal = ref()
            if journal is None:
                return
            window = journal.flush_window
            del journal
            if closing.wait(window):
                return  # close() syncs what is left
            dirty.clear()
            journal = ref()
            if journal is None:
                return
            journal.flush_pending()
            del journal

    def flush_pending(self) -> None:
        """Sync the WAL now if an unflushed commit is in it (the flusher calls this)."""
        if not self._flush_through(self._committed):
            self._dirty.set()  # try again a window later

    def _wake_checkpointer(self) -> None:
        """Ask the checkpoint thread for a pass (caller holds the lock); start it first."""
        if self._checkpointer is None or self._checkpointer_pid != os.getpid():
            self._checkpointer = threading.Thread(
                target=self._checkpoint_loop, args=(weakref.ref(self), self._checkpoint_due,
                                                    self._closing, self.path),
                daemon=True, name=f"journal-checkpoint:{self.path.name}")
            self._checkpointer_pid = os.getpid()
            self._checkpointer.start()
        self._checkpoint_due.set()

    @staticmethod
    def _checkpoint_loop(ref: weakref.ref[SqliteJournal], due: threading.Event,
                         closing: threading.Event, path: Path) -> None:
        """Run :meth:`_checkpoint` each time it is asked to, on a connection of its own
        (closed when the journal closes or is dropped: held weakly, as by the flusher)."""
        conn: sqlite3.Connection | None = None
        try:
            while not closing.is_set():
                if not due.wait(5.0):
                    if ref() is None:
                        return
                    continue
                due.clear()
                if closing.is_set():
                    return
                journal = ref()
                if journal is None:
                    return
                try:
                    if conn is None:
                        conn = sqlite3.connect(str(path), timeout=OPEN_BUSY_SECONDS,
                                               isolation_level=None, check_same_thread=False)
                    journal.checkpoint_pass(conn)
                except sqlite3.Error:
                    pass  # a pass that fails (the disk, a lock) is made again at the next
                del journal
        finally:
            if conn is not None:
                conn.close()

    def checkpoint_pass(self, conn: sqlite3.Connection) -> None:
        """One pass of the checkpoint thread (:meth:`_checkpoint`) on its connection ``conn``;
        the commits made before it began need no copy at ``close``."""
        start = self._committed
        self._checkpoint(conn)
        self._checkpointed = max(self._checkpointed, start)

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """Copy the WAL into the database file without stopping the writers.

        A pass copies the frames committed before it began; the appends made meanwhile
        are left for the next, so passes without a lock follow each other while this
        process appended during the last one (up to :data:`UNLOCKED_PASSES`). A WAL that
        was wholly copied when the next append begins is started over by that append;
        under a steady load that moment may never come, so once the WAL is
        :data:`RESTART_PAGES` long a last pass runs inside the writers' queue (this
        process's lock and the ``-writer`` flock): it copies the little left, and the
        next append starts the WAL over. A reader still on an old snapshot holds a pass
        back where it reads; the next pass goes on from there."""
        log = 0
        for _ in range(UNLOCKED_PASSES):
            before = self._committed
            _blocked, log, _done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if self._committed == before or self._closing.is_set():
                break  # wholly copied, unless another process appended meanwhile
        if log < RESTART_PAGES or self._closing.is_set():
            return
        with self._lock:
            queue = self._writer_queue()
            if queue is None:
                return  # no queue to wait in: SQLite's backstop starts the WAL over
            fcntl.flock(queue, fcntl.LOCK_EX)
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            finally:
                fcntl.flock(queue, fcntl.LOCK_UN)

    def _flush_through(self, mark: int) -> bool:
        """Make this connection's first ``mark`` commits durable; False if the fsync failed.

        Called without the journal's lock, so appends go on meanwhile. One fsync at a time:
        a caller whose commit was made before the sync in flight began is covered by it,
        and one that arrives during it waits, then starts the next (which covers every
        commit made by then) — group commit across this process's threads."""
        with self._synced:
            while self._durable < mark and self._syncing:
                self._synced.wait()
            if self._durable >= mark:
                return True
            self._syncing = True
            covers = self._committed  # every commit counted so far is in the WAL already
        ok = False
        try:
            ok = self._sync_wal()
        finally:
            with self._synced:
                self._syncing = False
                if ok:
                    self._durable = max(self._durable, covers)
                self._synced.notify_all()
        return ok

    def _sync_wal(self) -> bool:
        """fsync the WAL file (:func:`.wal_sync.sync_wal`); False when it could not (a later
        flush retries)."""
        ok, self._wal_inode = sync_wal(self.path, self._wal_inode)
        return ok

    def _writer_queue(self) -> int | None:
        """The fd of ``<journal>-writer`` (caller holds the lock); None where it cannot be
        made (a read-only folder): SQLite's own busy handler then orders the writers.

        The queue only orders writers; ``BEGIN IMMEDIATE`` is what excludes them, so a
        queue that is shared by mistake (an fd inherited across ``fork``: an flock belongs
        to the open file, not the process) costs waiting, never safety. A forked child
        opens its own all the same."""
        if self._writer_fd is None or self._writer_pid != os.getpid():
            try:
                self._writer_fd = os.open(f"{self.path}-writer", os.O_CREAT | os.O_RDWR,
                                          0o600)
                self._writer_pid = os.getpid()
            except OSError:
                return None
        return self._writer_fd

    def _append(self, events: Sequence[NewEvent]) -> list[AuditEvent]:
        encoded = encode(events)  # the payloads' text and hashes: before the lock
        with self._lock:
            queue = self._writer_queue()
            if queue is not None:  # wait in the kernel's queue, not in the busy handler
                fcntl.flock(queue, fcntl.LOCK_EX)
            try:
                return self._append_locked(events, encoded)
            finally:
                if queue is not None:
                    fcntl.flock(queue, fcntl.LOCK_UN)

    def _append_locked(self, events: Sequence[NewEvent],
                       encoded: Sequence[Encoded]) -> list[AuditEvent]:
        """One ``BEGIN IMMEDIATE`` transaction (caller holds the lock and the queue)."""
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise JournalError(f"cannot write the journal `{self.path}`: {exc}") from exc
        try:
            guarded = [e.subject for e in events if e.if_last is not None]
            # the head, each if_last subject's latest seq, and the file's format: one query
            row = conn.execute(f"SELECT *, (SELECT user_version FROM pragma_user_version) "
                               f"FROM ({head_sql('?', len(guarded))})", guarded).fetchone()
            # INVARIANT: no write to a file a newer release upgraded while this one had it
            # open: it would keep none of what the newer format derives (test_418)
            version, row = row[-1], row[:-1]
            if version != JOURNAL_FORMAT:
                raise JournalError(
                    f"the journal `{self.path}` was upgraded to format `{version}` while it "
                    f"was open (this cradle-kg writes format `{JOURNAL_FORMAT}`: a newer "
                    "cradle-kg opened it); the append was not written",
                    hint="upgrade cradle-kg in every process that opens this journal (an "
                         "older one would write without what the newer format keeps)")
            seq, prev = (row[0], row[1]) if row[0] is not None else (0, GENESIS_HASH)
            caps = append_caps(events)
            if caps:  # INVARIANT: a limit is checked under the writer's lock (see UsageCap)
                breached = breached_cap(events, caps, [conn.execute(
                    derived.USAGE_WINDOW_SQL, (cap.scope, cap.subject, iso(cap.since)[:19])
                ).fetchone() for cap in caps])
                if breached is not None:
                    raise LimitReached(breached)
            for wait in append_waiting(events):  # INVARIANT: under the writer's lock too
                waiting = sum(int(conn.execute(sql, args).fetchone()[0])
                              for sql, args in tasks_sql.waiting_sql("sqlite", wait.agent,
                                                                 run=wait.run))
                if waiting >= wait.limit:
                    raise WaitingReached(wait, waiting)
            for cap in append_uploads(events):  # INVARIANT: an upload quota, too (UploadCap)
                recent = [recent_size(r) for r in conn.execute(RECENT_SIZES_SQL, (
                    cap.kind, cap.actor, iso(cap.since),
                    -1 if cap.max_uploads is None else cap.max_uploads))]
                if cap.full(recent):
                    raise UploadsReached(cap, recent)
            if guarded:  # INVARIANT: checked under the writer's lock (see NewEvent.if_last)
                moved = moved_subject(events, list(row[2:]))
                if moved is not None:
                    raise SubjectMoved(moved)
            fresh = new_runs(events)
            if fresh:  # INVARIANT: checked under the writer's lock (see NewEvent.if_new_run)
                begun = begun_run(events, [conn.execute(
                    RUN_BEGUN_SQL.format("?"), (run_id,)).fetchone()[0] for run_id in fresh])
                if begun is not None:
                    raise RunNotNew(begun)
            ending = open_runs(events)
            if ending:  # INVARIANT: checked under the writer's lock (see NewEvent.if_run_open)
                ended = ended_run(events, [conn.execute(
                    RUN_ENDED_SQL.format("?"), (run_id,)).fetchone()[0] for run_id in ending])
                if ended is not None:
                    raise RunEnded(ended)
            approvals = append_approvals(events)
            if approvals:  # INVARIANT: under the writer's lock too (see ApprovalGuard)
                lost = moved_approval(approvals, [
                    conn.execute(*guard_probe("sqlite", g)).fetchone()[0] for g in approvals])
                if lost is not None:
                    raise ApprovalMoved(lost)
            written: list[AuditEvent] = []
            runs: dict[str, list[int]] = {}
            settled = settled_intents(events)
            rows: list[tuple[Any, ...]] = []  # the event rows not inserted yet
            for i, (new, enc) in enumerate(zip(events, encoded, strict=True)):
                seq += 1
                row, event = self._new_row(seq, prev, new, enc)
                rows.append(row)
                written.append(event)
                if derived.reads_events(new.kind):
                    # INVARIANT: what derives from the events reads them up to this one
                    self._insert(conn, rows)
                # INVARIANT: derived state changes in the transaction that writes its events
                derived.apply(conn, seq=seq, run_id=new.run_id, kind=new.kind,
                              subject=new.subject, at=enc.at, payload=new.payload,
                              settled=i in settled)
                count_run(runs, seq=seq, run_id=new.run_id, kind=new.kind)
                prev = event.hash
            self._insert(conn, rows)
            derived.apply_runs(conn, self._runs.needed(runs, written[0].seq - 1))
            conn.execute(
                "INSERT INTO head(one, seq, hash) VALUES (1, ?, ?) "
                "ON CONFLICT(one) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
                (seq, prev),
            )
            conn.execute("COMMIT")
            self._runs.committed(runs, seq)
            return written
        except sqlite3.IntegrityError as exc:
            conn.execute("ROLLBACK")
            keys = [e.idem_key for e in events if e.idem_key]
            if keys and "idem_key" in str(exc):
                raise IdempotencyKeyTaken(self._taken(keys)) from exc
            raise JournalError(f"journal integrity error: {exc}") from exc
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _taken(self, keys: list[str]) -> str:
        """Which of ``keys`` is already claimed (the first, if none is found: a duplicate
        within the batch itself)."""
        marks = ",".join("?" * len(keys))
        rows = self._conn.execute(
            f"SELECT idem_key FROM events WHERE idem_key IN ({marks}) ORDER BY seq",
            keys).fetchall()
        return str(rows[0][0]) if rows else keys[0]

    @staticmethod
    def _new_row(seq: int, prev: str, new: NewEvent, enc: Encoded
                 ) -> tuple[tuple[Any, ...], AuditEvent]:
        """The ``events`` row of ``new`` at ``seq`` after ``prev``, and the event it is."""
        payload_text, payload_hash, at = enc.payload_text, enc.payload_hash, enc.at
        event_id = f"evt-{seq:010d}"
        own = event_hash(
            seq=seq, event_id=event_id, run_id=new.run_id, kind=new.kind,
            subject=new.subject, actor=new.actor, at=at,
            payload_hash=payload_hash, prev_hash=prev, idem_key=new.idem_key,
        )
        row = (seq, event_id, new.run_id, new.kind, new.subject, new.actor, at,
               payload_text, payload_hash, prev, own, new.idem_key)
        # built from values this method just computed: no validation pass on the hot path
        return row, built_event(
            seq=seq, id=event_id, run_id=new.run_id, kind=new.kind, subject=new.subject,
            actor=new.actor, at=parse_iso(at), payload=new.payload,
            payload_hash=payload_hash, prev_hash=prev, hash=own,
        )

    @staticmethod
    def _insert(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
        """Insert ``rows`` (:meth:`_new_row`) in one statement, and empty the list."""
        if rows:
            conn.executemany(
                "INSERT INTO events(seq, id, run_id, kind, subject, actor, at, payload, "
                "payload_hash, prev_hash, hash, idem_key) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                rows)
            rows.clear()

    # --- reading ------------------------------------------------------------------

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return list(self._conn.execute(sql, args).fetchall())
            except sqlite3.Error as exc:
                raise JournalError(f"cannot read the journal `{self.path}`: {exc}") from exc

    _COLS = "seq, id, run_id, kind, subject, actor, at, payload, payload_hash, prev_hash, hash"

    @staticmethod
    def _row(row: tuple[Any, ...]) -> AuditEvent:
        import json

        return AuditEvent(
            seq=row[0], id=row[1], run_id=row[2], kind=row[3], subject=row[4],
            actor=row[5], at=parse_iso(row[6]), payload=json.loads(row[7]),
            payload_hash=row[8], prev_hash=row[9], hash=row[10],
        )

    def events(self, *, run_id: str | None = None, since_seq: int = 0,
               batch: int = 5000) -> Iterator[AuditEvent]:
        """Events in journal order, optionally of one run, after ``since_seq``."""
        last = since_seq
        while True:
            if run_id is None:
                rows = self._query(
                    f"SELECT {self._COLS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                    (last, batch),
                )
            else:
                rows = self._query(
                    f"SELECT {self._COLS} FROM events WHERE run_id = ? AND seq > ? "
                    "ORDER BY seq LIMIT ?",
                    (run_id, last, batch),
                )
            if not rows:
                return
            for row in rows:
                yield self._row(row)
            if len(rows) < batch:  # the last page: no query for an empty one
                return
            last = rows[-1][0]

    def raw_rows(self, columns: str) -> Iterator[tuple[Any, ...]]:
        """Every event row as stored (``columns`` of the events table), in seq order,
        streamed through a connection of its own (for ``journal copy``)."""
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            yield from conn.execute(f"SELECT {columns} FROM events ORDER BY seq")
        finally:
            conn.close()

    def events_for_subject(self, subject: str, *, run_id: str | None = None,
                           kinds: Sequence[str] = ()) -> list[AuditEvent]:
        sql = events_for_subject_sql(self._COLS, "?", in_run=run_id is not None,
                                     kinds=len(kinds))
        args = (subject, *((run_id,) if run_id is not None else ()), *kinds)
        return [self._row(r) for r in self._query(sql, args)]

    def events_of_kind(self, kind: str) -> list[AuditEvent]:
        rows = self._query(f"SELECT {self._COLS} FROM events WHERE kind = ? ORDER BY seq", (kind,))
        return [self._row(r) for r in rows]

    def watermark(self) -> int:
        """Changes whenever *another* connection commits (SQLite's ``data_version``)."""
        return int(self._query("PRAGMA data_version")[0][0])

    def wait_for_change(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for another connection's commit: SQLite has no
        notification between processes, so ``data_version`` is read every
        :data:`CHANGE_POLL_SECONDS` (a few microseconds each). True when it moved since
        the previous call (the first call only records it), False on timeout."""
        deadline = time.monotonic() + max(0.0, timeout)
        version = self.watermark()
        if self._change_seen is None:
            self._change_seen = version
        while version == self._change_seen:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(CHANGE_POLL_SECONDS, left))
            version = self.watermark()
        self._change_seen = version
        return True

    def last_of_kind(self, kind: str) -> AuditEvent | None:
        rows = self._query(f"SELECT {self._COLS} FROM events WHERE kind = ? "
                           "ORDER BY seq DESC LIMIT 1", (kind,))
        return self._row(rows[0]) if rows else None

    def last_for_subject(self, subject: str, kind: str, *, not_by: tuple[str, ...] = (),
                         for_run: tuple[str, str] | None = None,
                         for_action: str | None = None,
                         bound_only: bool = False) -> AuditEvent | None:
        sql, args = last_for_subject_sql(kind, self._COLS, "?", not_by=not_by,
                                         for_run=for_run, for_action=for_action,
                                         bound_only=bound_only)
        rows = self._query(sql, (subject, *args))
        return self._row(rows[0]) if rows else None

    def intent_for_key(self, key: str) -> AuditEvent | None:
        rows = self._query(f"SELECT {self._COLS} FROM events WHERE idem_key = ?", (key,))
        return self._row(rows[0]) if rows else None

    def claimed_keys(self) -> dict[int, str]:
        """seq -> idempotency key of every event that claimed one."""
        return {int(r[0]): str(r[1]) for r in self._query(
            "SELECT seq, idem_key FROM events WHERE idem_key IS NOT NULL ORDER BY seq")}

    def event_for_key(self, key: str) -> AuditEvent | None:
        """The event that claimed a key (an intent, a proposal id in its run, ...)."""
        return self.intent_for_key(key)

    def run_agent(self, run_id: str) -> str | None:
        # the run's events in order (index events_run), up to its first proposal or claim
        rows = self._query("SELECT actor FROM events WHERE run_id = ? AND kind IN "
                           "('proposal.received', 'run.claimed') ORDER BY seq LIMIT 1",
                           (run_id,))
        return str(rows[0][0]) if rows else None

    def latest_outcome(self, run_id: str, proposal_id: str) -> AuditEvent | None:
        """The last ``run.outcome`` event of a proposal in a run (not of a submission that
        was refused because it reused the id for other content): one range of the index
        ``events_outcome`` (format 8; before it, every event of the run was read —
        ``tests/security/test_85``)."""
        rows = self._query(LATEST_OUTCOME_SQL.format(cols=self._COLS), (run_id, proposal_id))
        return self._row(rows[0]) if rows else None

    def recent_sizes(self, kind: str, actor: str, *, since: datetime,
                     limit: int | None,
                     window: float | None = None) -> list[tuple[datetime, int]]:
        """See :meth:`~.journal.Journal.recent_sizes` (index ``events_kind_actor``)."""
        rows = self._query(RECENT_SIZES_SQL,
                           (kind, actor, iso(since), -1 if limit is None else limit))
        return [recent_size(r) for r in rows]

    def usage_since(self, *, field: str | None, value: str | None,
                    since: datetime) -> tuple[int, float]:
        """Intents (calls attempted) and their declared cost since a time, for limits.

        Read from the per-second usage buckets' running totals (see :mod:`.derived`): two
        index probes at any window length; the second that holds ``since`` counts in
        full, so a limit may bind up to one second early, never late.
        """
        if field is not None and not windowed(field):
            raise ValueError(f"no usage field `{field}`")
        rows = self._query(
            derived.USAGE_WINDOW_SQL,
            ("*", "", iso(since)[:19]) if field is None else (field, value, iso(since)[:19]))
        return window_usage(rows[0])

    def usage_within(self, *, field: str | None, value: str | None, window: float,
                     now: datetime) -> tuple[int, float]:
        """:meth:`usage_since` ``now - window``: the file is one host's, and its processes
        read one clock."""
        return self.usage_since(field=field, value=value,
                                since=now - timedelta(seconds=window))

    def server_time(self) -> datetime | None:
        """None: the file is one host's, and its processes read one clock (the
        runtime's)."""
        return None

    def usage_total(self, scope: str, subject: str) -> tuple[int, float]:
        """Everything ever counted in one usage bucket (a budget's spend: see
        :meth:`~.journal.Journal.usage_total`): two index probes."""
        rows = self._query(derived.USAGE_WINDOW_SQL, (scope, subject, iso(BEGINNING)[:19]))
        return window_usage(rows[0])

    def usage_top(self, scope: str) -> tuple[str, int, float] | None:
        rows = self._query(derived.USAGE_TOP_SQL, (scope,))
        if not rows:
            return None
        return (str(rows[0][0]), *window_usage(rows[0][1:]))

    def run_ids(self) -> list[str]:
        """Every run, in the order of its first event."""
        return [r[0] for r in self._query("SELECT run_id FROM runs ORDER BY first_seq")]

    def has_run(self, run_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)))

    def proposal_runs(self, *, limit: int | None = None, offset: int = 0,
                      newest_first: bool = False) -> tuple[list[str], int]:
        """One page of the runs that received a proposal (in the order of their first
        event), and how many there are in all."""
        order = "DESC" if newest_first else "ASC"
        rows = self._query(
            f"SELECT run_id FROM runs WHERE proposals > 0 ORDER BY first_seq {order} "
            "LIMIT ? OFFSET ?", (-1 if limit is None else limit, offset))
        total = self._query("SELECT COUNT(*) FROM runs WHERE proposals > 0")[0][0]
        return [r[0] for r in rows], int(total)

    def listed_runs(self, *, keys: list[StateKey] | None = None, limit: int | None = None,
                    offset: int = 0, newest_first: bool = False) -> tuple[list[str], int]:
        rows_sql, count_sql, args = run_state_sql.page("sqlite", keys,
                                                       newest_first=newest_first)
        rows = self._query(rows_sql, (*args, -1 if limit is None else limit, offset))
        return [str(r[0]) for r in rows], int(self._query(count_sql, args)[0][0])

    def run_page(self, run_id: str, *, limit: int, after_seq: int = 0, newest: bool = False,
                 kinds: Sequence[str] = (), marked: bool = False) -> list[AuditEvent]:
        sql = run_state_sql.run_page("sqlite", self._COLS, kinds=len(kinds), newest=newest,
                                     marked=marked)
        like = (run_state_sql.SECRET_MARK_LIKE,) if marked else ()
        return [self._row(r) for r in self._query(sql, (run_id, after_seq, *kinds, *like,
                                                        limit))]

    def run_counts(self, run_id: str) -> tuple[int, int, int]:
        row = self._query(run_state_sql.counts("sqlite"), (run_id,))[0]
        return int(row[0]), int(row[1]), int(row[2])

    def max_step(self, run_id: str) -> int:
        rows = self._query(run_state_sql.max_step("sqlite"), (run_id,))
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0

    def run_state_row(self, run_id: str) -> tuple[str, str, int, int, int, str] | None:
        rows = self._query(run_state_sql.one_row("sqlite"), (run_id,))
        return run_state_sql.state_row(rows[0] if rows else None)

    def run_state_groups(self) -> list[tuple[StateKey, int]]:
        return [((int(r[0]), str(r[1]), int(r[2]), str(r[3]), int(r[4]), int(r[5])), int(r[6]))
                for r in self._query(run_state_sql.GROUPS)]

    def approval_requests(self, *, undecided: bool = False, run_id: str | None = None,
                          requested_by: str | None = None, limit: int | None = None,
                          offset: int = 0, decider: Decider | None = None
                          ) -> tuple[list[AuditEvent], int]:
        rows_sql, count_sql, args = tasks_sql.approvals_page(
            "sqlite", self._COLS, undecided=undecided, run_id=run_id, requested_by=requested_by,
            decider=decider)
        rows = self._query(rows_sql, (*args, -1 if limit is None else limit, offset))
        total = int(self._query(count_sql, args)[0][0])
        return [self._row(r) for r in rows], total

    def waiting_under_key(self, asked: KeyAsked, *, approved: bool = False,
                          offset: int = 0) -> AuditEvent | None:
        rows_sql, _, args = tasks_sql.approvals_page(
            "sqlite", self._COLS, undecided=True, run_id=None, requested_by=asked.agent,
            keyed=asked, unrun=approved)
        rows = self._query(rows_sql, (*args, 1, offset))
        return self._row(rows[0]) if rows else None

    def written_untrusted(self, firsts: Sequence[str], before: int) -> list[list[str]]:
        wanted = list(dict.fromkeys(firsts))
        out: list[list[str]] = []
        for i in range(0, len(wanted), WRITTEN_CHUNK):
            chunk = wanted[i:i + WRITTEN_CHUNK]
            out.extend(written_values(self._query(derived.LINEAGE_WRITTEN_READ.format(
                marks=", ".join("?" * len(chunk))), (before, *chunk))))
        return out

    def latest_budget_sets(self) -> list[AuditEvent]:
        cols = prefixed(self._COLS)
        return [self._row(r) for r in self._query(tasks_sql.BUDGET_SETS_SQL.format(cols))]

    def inbox_order(self, kinds: Sequence[str], *, run_id: str | None = None,
                    limit: int | None = None, offset: int = 0,
                    decider: Decider | None = None) -> list[tuple[str, int]]:
        sql, args = tasks_sql.inbox_order("sqlite", kinds, run_id=run_id,
                                          decider=decider)
        rows = self._query(sql, (*args, -1 if limit is None else limit, offset))
        return [(str(r[0]), int(r[1])) for r in rows]

    def open_step_requests(self, *, run_id: str | None = None, limit: int | None = None,
                           offset: int = 0, agent: str | None = None,
                           decider: Decider | None = None) -> tuple[list[AuditEvent], int]:
        rows_sql, count_sql, args = tasks_sql.steps_page("sqlite", self._COLS, run_id=run_id,
                                                         agent=agent, decider=decider)
        rows = self._query(rows_sql, (*args, -1 if limit is None else limit, offset))
        total = int(self._query(count_sql, args)[0][0])
        return [self._row(r) for r in rows], total

    def waiting(self, agent: str, *, run: str | None = None) -> int:
        return sum(int(self._query(sql, args)[0][0])
                   for sql, args in tasks_sql.waiting_sql("sqlite", agent, run=run))

    def run_repairs(self, run_id: str) -> int:
        rows = self._query(tasks_sql.REPAIRS_SQL.format("?"), (run_id,))
        return int(rows[0][0]) if rows else 0

    def human_tasks(self, *, run_id: str | None = None, include_resolved: bool = False,
                    limit: int | None = None, offset: int = 0,
                    decider: Decider | None = None
                    ) -> tuple[list[tuple[AuditEvent, AuditEvent | None]], int]:
        rows_sql, count_sql, args = tasks_sql.page("sqlite", self._COLS, run_id=run_id,
                                                   include_resolved=include_resolved,
                                                   decider=decider)
        rows = self._query(rows_sql, (*args, -1 if limit is None else limit, offset))
        total = int(self._query(count_sql, args)[0][0])
        n = len(self._COLS.split(","))
        return [(self._row(r[:n]), self._row(r[n:]) if r[n] is not None else None)
                for r in rows], total

    def approval_subjects(self, *, run_id: str | None = None) -> list[str]:
        if run_id is None:
            rows = self._query(APPROVAL_SUBJECTS_SQL.format(run=""))
        else:
            rows = self._query(APPROVAL_SUBJECTS_SQL.format(run=" WHERE e.run_id = ?"),
                               (run_id,))
        return [str(r[0]) for r in rows]

    def subject_events(self, subject: str, kind: str | None, *, limit: int,
                       newest: bool = True, run_id: str | None = None) -> list[AuditEvent]:
        sql, args = subject_events_sql(self._COLS, "?", kind, newest=newest,
                                       in_run=run_id is not None)
        run = () if run_id is None else (run_id,)
        return [self._row(r) for r in self._query(sql, (subject, *args, *run, limit))]

    def approval_request(self, approval_id: str) -> AuditEvent | None:
        rows = self._query(APPROVAL_REQUEST_SQL.format(cols=prefixed(self._COLS), p="?"),
                           (approval_id,))
        return self._row(rows[0]) if rows else None

    def approval_place(self, approval_id: str) -> tuple[str, str] | None:
        rows = self._query("SELECT a.subject, e.run_id FROM approval_ids a JOIN events e "
                           "ON e.seq = a.seq WHERE a.approval_id = ?", (approval_id,))
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def approval_moved(self, guard: ApprovalGuard) -> bool:
        rows = self._query(*guard_probe("sqlite", guard))
        return bool(rows and rows[0][0])

    def approval_uses(self, approval_id: str, run_id: str, *, after: int, before: int
                      ) -> int:
        rows = self._query(tasks_sql.approval_uses("sqlite"), (run_id, after, before, approval_id))
        return int(rows[0][0]) if rows else 0

    def subject_last(self, subject: str) -> int:
        rows = self._query(SUBJECT_LAST_SQL.format("?"), (subject,))
        return int(rows[0][0]) if rows else 0

    def head(self) -> tuple[int, str]:
        rows = self._query(HEAD_SQL)
        return (rows[0][0], rows[0][1]) if rows else (0, GENESIS_HASH)

    def digest_key(self) -> bytes:
        if self._digest_key is None:
            with self._lock:
                try:  # INVARIANT: inserted only if absent, then read: one key per journal
                    self._conn.execute(
                        "INSERT OR IGNORE INTO journal_keys(name, key) VALUES (?, ?)",
                        (DIGEST_KEY_NAME, os.urandom(DIGEST_KEY_BYTES)))
                except sqlite3.Error as exc:
                    raise JournalError(f"cannot write the digest key of the journal "
                                       f"`{self.path}`: {exc}") from exc
                self._digest_key = self.stored_digest_key()
        assert self._digest_key is not None  # inserted above, or by another writer
        return self._digest_key

    def stored_digest_key(self) -> bytes | None:
        with self._lock:
            row = self._conn.execute("SELECT key FROM journal_keys WHERE name = ?",
                                     (DIGEST_KEY_NAME,)).fetchone()
        if row is None:
            return None
        problem = stored_key_problem(row[0])
        if problem is not None:  # never bytes(an integer): that many bytes (test_296)
            raise JournalError(f"{problem} (`{self.path}`)",
                               hint="`cradle-kg audit verify` says the journal is broken")
        return bytes(row[0])

    def adopt_digest_key(self, key: bytes) -> None:
        """Give this journal ``key`` (strict replay's scratch journal takes the recorded
        one); refused once the journal holds events under a key of its own."""
        with self._lock:
            if self.stored_digest_key() not in (None, key) and self.head()[0]:
                raise JournalError(f"the journal `{self.path}` holds events under a digest "
                                   "key of its own: it cannot take another")
            self._conn.execute("INSERT OR REPLACE INTO journal_keys(name, key) VALUES (?, ?)",
                               (DIGEST_KEY_NAME, key))
            self._digest_key = key

    def first_hash(self) -> str | None:
        rows = self._query(FIRST_HASH_SQL)
        return str(rows[0][0]) if rows else None

    def dangling_intents(self) -> list[tuple[int, str]]:
        """(seq, action id) of every intent with no ``run.outcome`` after it, oldest first."""
        return [(int(r[0]), str(r[1]))
                for r in self._query("SELECT seq, subject FROM open_intents ORDER BY seq")]

    # --- verifying ----------------------------------------------------------------

    def verify(self, *, anchor: Anchor | None = None, progress: Progress | None = None,
               semantics: bool = False) -> ChainReport:
        """Recompute the chain from the first event; name the first one that breaks it.

        Reads the file through its own read-only connection, in one read transaction
        (see :mod:`.verify`); appends by this object or others may go on meanwhile.
        """
        return verify_journal(self.path, anchor=anchor, progress=progress,
                              semantics=semantics)

    # --- workers: file locks next to the journal ------------------------------------

    def acquire_lease(self) -> WorkerLease:
        return WorkerLease(self.path.parent / "workers")

    def worker_alive(self, worker_id: str) -> bool:
        return worker_alive(self.path.parent / "workers", worker_id)

    def exclusive(self, name: str) -> AbstractContextManager[None]:
        return exclusive_file(self.path.parent / f"{name}.lock")
