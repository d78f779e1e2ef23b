"""The journal on PostgreSQL (psycopg 3): one journal of record for many workers.

Same events, same chain, same hashes as :class:`~.sqlite.SqliteJournal` byte for byte.

* **Appends are serialised** by a transaction-level advisory lock taken *before* the head
  is read (READ COMMITTED: the head read after the lock is the last committed one), so two
  workers never chain onto the same head; the head row is updated in the same transaction.
  An append is one round trip (:mod:`.pg_append`): one query string — ``BEGIN``, the
  server-side ``cradle_append`` (migration 11: the lock, the head, the guards, the events
  numbered and hashed as :func:`~.chain.event_hash` hashes them, the head moved), the
  derived state, ``COMMIT`` — so the lock is held only while the server works, never while
  it waits for its client (with 4 workers on 2 cores it was: a convoy). An append whose
  intents carry caps, or that makes one more item wait for a person (a
  :class:`~.journal.WaitingCap`), takes two round trips (BEGIN, the lock, the head and the
  caps' usage or the waiting counts; then the rows and COMMIT), one and a half of them
  under the lock.
* **Limits are checked under the lock**: an intent's caps (:class:`~.journal.UsageCap`)
  are read in the append's first round trip, after the lock, and a cap the append would
  exceed refuses it (:class:`~.journal.LimitReached`, nothing written); so is an event's
  ``if_last`` (the latest seq of its subject it was decided on: :class:`~.journal.SubjectMoved`)
  and its ``if_new_run`` (no event of its run yet: :class:`~.journal.RunNotNew`) — in
  ``cradle_append`` after its lock, or in the first round trip of a capped append.
* **An idempotency key is claimed once** by the partial UNIQUE index on ``idem_key``: the
  second claimant's transaction fails with a unique violation and writes nothing.
* **Derived state** (usage buckets of intents and of budgets, open intents, approval
  ids, runs) changes in the append's transaction: the append's events in one ``INSERT``,
  then each event's derived rows (:func:`.pg_schema.derived_statements`: an intent's or
  a model call's usage buckets in one upsert for all its scopes), then one ``runs``
  upsert for the append's runs.
* **Leases** are session advisory locks held on a connection of their own: the server
  drops them when the worker's connection dies (SIGKILL closes the socket; TCP keepalives
  find a dead host). :meth:`worker_alive` asks the server whether the lock is held.
* The schema is versioned (:mod:`.pg_schema`): a database that is not migrated to this
  code's version is refused with the command that migrates it; one whose objects are not
  the migrations' (``cradle_append`` replaced, a trigger added, an index made plain) is
  refused to write, and each append checks, before it commits, that the function, the
  chain's tables and the claim's index are the ones the journal found when it opened
  (:mod:`.pg_objects`).
* **A lost session is replaced** (``pg_terminate_backend``, a restart, a failover, a
  network cut): the next operation opens a new one through :meth:`PostgresJournal._session`
  (what the journal's open set and checked; the same journal, its first event and digest
  key: ``test_486``), reads the head again, and goes on; an append
  whose session was lost while it ran is settled before it is tried again — the old
  session ended, its events read back by content — or is a
  :class:`~cradle_kg.errors.JournalOutcomeUnknown` (``tests/security/test_472``,
  ``test_474``).
* **Change wake-ups**: an append's transaction issues ``pg_notify`` on the journal's
  channel (one per schema: :func:`change_channel`), delivered at its commit; a reader
  waits for one in :meth:`PostgresJournal.wait_for_change` (``LISTEN`` on a connection of
  its own) instead of polling — the projector (``graph follow``) wakes at once.
"""

from __future__ import annotations

import logging
import os
import re
import select
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar

from ..canonical import iso, parse_iso
from ..errors import JournalError, JournalOutcomeUnknown
from ..records import AuditEvent
from . import pg_append, pg_schema, run_state_sql, tasks_sql
from .chain import GENESIS_HASH, Anchor, ChainReport, Progress, event_hash, hash_parts
from .counting import (
    APPROVAL_REQUEST_SQL,
    APPROVAL_SUBJECTS_SQL,
    REFUSALS_SCOPE,
    RUN_BEGUN_SQL,
    RUN_ENDED_SQL,
    SERVER_SCOPE_PREFIX,
    SUBJECT_LAST_SQL,
    USAGE_FIELDS,
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
    UsageCap,
    WaitingReached,
    append_approvals,
    append_caps,
    append_uploads,
    append_waiting,
    begun_run,
    breached_cap,
    encode,
    ended_run,
    expired_use,
    expiring_uses,
    guard_probe,
    moved_approval,
    moved_subject,
    new_runs,
    open_runs,
    read_only_error,
    written_values,
)
from .pg_append import PendingSeq
from .pg_connect import (
    APPEND_LOCK,
    LEASE_LOCKS,
    NAMED_LOCKS,
    connect,
    int4,
    keep_schema,
    lease_key,
    redact,
    schema_version,
)
from .pg_objects import (
    ALTERED_MARK,
    APPEND_LINE,
    NOT_WRITTEN,
    PIN_SQL,
    PREPARE_CHECK_SQL,
    READ,
    UNPINNED,
    Pin,
    altered_error,
)
from .pg_verify import open_problem
from .run_state_sql import StateKey
from .tasks_sql import Decider, KeyAsked

_WORKER_ID = re.compile(r"^w-[0-9a-f]{16}$")
# an append refused by a key ends its pipeline with an error we handle: no stray warning
logging.getLogger("psycopg").addHandler(logging.NullHandler())
_log = logging.getLogger(__name__)
#: what a journal found of the function it calls (:meth:`PostgresJournal._pin`)
_ALTERED = "the journal's function `cradle_append` was altered"
_COLS = "seq, id, run_id, kind, subject, actor, at, payload, payload_hash, prev_hash, hash"


#: a transaction of one statement that writes a WAL record (an empty logical-decoding
#: message, transactional: it is given a transaction id), so its commit flushes the WAL up
#: to it (``synchronous_commit`` on, the session's setting) — and so every commit before
#: it: how a durable append confirms its own commit, made with ``synchronous_commit = off``
#: under the append lock. A transaction that writes no WAL (``SELECT
#: pg_current_xact_id()``) flushes nothing: measured, 0 flushes of 20.
FLUSH_SQL: Final = "SELECT pg_logical_emit_message(true, 'cradle-kg.flush', '')"


def _refusal(sqlstate: str, detail: str, events: Sequence[NewEvent],
             guarded: Sequence[tuple[str, int]], fresh: Sequence[str],
             used: Sequence[ApprovalGuard]) -> Exception | None:
    """The refusal ``cradle_append`` raised (its SQLSTATE and detail: :mod:`.pg_append`)
    for an append of ``events``, or None. A detail that names nothing of the append raises
    ValueError or IndexError (the migrations' function never gives one)."""
    if sqlstate == pg_append.SUBJECT_MOVED:
        return SubjectMoved(guarded[_nth(detail)][0])
    if sqlstate == pg_append.RUN_BEGUN:
        begun = begun_run(events, [flag == "t" for flag in detail.split(",")])
        return RunNotNew(begun if begun is not None else fresh[0])
    if sqlstate == pg_append.RUN_ENDED:
        ended = ended_run(events, detail.split(","))
        return RunEnded(ended if ended is not None else open_runs(events)[0])
    if sqlstate == pg_append.APPROVAL_REVOKED:
        return ApprovalMoved(used[_nth(detail)])
    return _HeadBehind() if sqlstate == pg_append.HEAD_BEHIND else None


#: the migrations this code's journal is at (``schema_migrations``' rows)
_MIGRATED: Final = [(m.version, m.name) for m in pg_schema.MIGRATIONS]


def _version_error(location: str, applied: Sequence[tuple[int, str]], *,
                   then: str | None = None) -> JournalError:
    """The refusal of a journal whose ``schema_migrations`` (``applied``) is not this
    code's migrations: when it opens, or (``then``: what was done about it) when an append
    finds it migrated since — by a newer release's ``db migrate`` while this worker ran,
    whose derived state this code would not keep (``tests/security/test_418``)."""
    have = applied[-1][0] if applied else 0
    if then is None:
        other = next((f"; its migration `{v}` is `{n}`, not `{name}`" for (v, n), (w, name)
                      in zip(applied, _MIGRATED, strict=False) if v == w and n != name), "")
        return JournalError(
            f"the journal `{location}` is at schema version `{have}`; this cradle-kg "
            f"needs `{pg_schema.LATEST}`{other}",
            hint="upgrade cradle-kg" if have > pg_schema.LATEST else
            "run `cradle-kg db migrate` (with the same `CRADLE_JOURNAL_URL`)")
    return JournalError(
        f"the journal `{location}` was migrated to schema version `{have}` while it was "
        f"open (this cradle-kg writes `{pg_schema.LATEST}`: a newer cradle-kg's `db "
        f"migrate` ran); {then}",
        hint="upgrade cradle-kg on every worker of this journal (an older worker would write "
             "without what the newer schema keeps)")


def _writer_settings(server_version: int) -> str:
    """The statement that sets what a writing session relies on, whatever the database, a
    role or the URL made its defaults (one round trip, when the journal opens):

    * INVARIANT: the head read after the append lock is the last committed one — READ
      COMMITTED, each statement its own snapshot (``tests/security/test_420``: under
      REPEATABLE READ the snapshot was taken before the lock was granted, and an append
      that waited for another's failed on an intact journal);
    * INVARIANT: a durable append's commit waits for its flush (``test_420``):
      ``synchronous_commit`` ``off`` becomes ``on`` (a stronger setting is kept; a deferred
      append says ``OFF`` in its own transaction);
    * INVARIANT: an append waits for the append lock as long as another worker's append
      holds it (``lock_timeout = 0``, ``test_421``);
    * INVARIANT: a live worker's session is not ended for idling between its calls, or
      while a tool runs (``idle_session_timeout = 0``, PostgreSQL 14's, ``test_420``), as
      its lease's is not."""
    idle = (", set_config('idle_session_timeout', '0', false)"
            if server_version >= 140000 else "")
    return ("SELECT set_config('default_transaction_isolation', 'read committed', false), "
            "set_config('lock_timeout', '0', false)" + idle + ", "
            "CASE WHEN current_setting('synchronous_commit') = 'off' "
            "THEN set_config('synchronous_commit', 'on', false) END")


def _nth(detail: str) -> int:
    """The 0-based index a 1-based position detail names (ValueError: not one)."""
    n = int(detail)
    if n < 1:
        raise ValueError(detail)
    return n - 1


class _SchemaMoved(Exception):
    """What this journal pinned (:class:`.pg_objects.Pin`) moved: the append's check
    failed its transaction, nothing written."""


#: a lost session is replaced by at most this many attempts to connect, the first at
#: once, then waiting RECONNECT_BACKOFF seconds, doubling (at most 2 s)
RECONNECT_ATTEMPTS = 6
RECONNECT_BACKOFF = 0.1
#: how long a lost append's old session may take to end before its outcome is read
OLD_SESSION_WAIT = 10.0

_T = TypeVar("_T")


@dataclass(frozen=True)
class _Session:
    """What :meth:`PostgresJournal._session` set up: the journal's schema, what the
    appends pin, whether a durable append flushes apart, the backend (pid, start)."""

    schema: str | None
    pinned: Pin
    flush_apart: bool
    backend: tuple[int, Any] | None


class _SessionLost(Exception):
    """The journal's session was lost during an append or its flush (its outcome is not
    known yet): ``backend`` is the session's (pid, start)."""

    def __init__(self, backend: tuple[int, Any] | None) -> None:
        super().__init__("the journal's session was lost")
        self.backend = backend


class _HeadBehind(Exception):
    """The journal's head is behind the one this object last saw (``cradle_append``
    refused): another journal now stands at its place."""


def change_channel(schema: str) -> str:
    """The ``NOTIFY`` channel of the journal in ``schema``: a channel is database-wide,
    so two journals in two schemas of one database do not wake each other's readers."""
    return f"cradle_journal_{zlib.crc32(schema.encode('utf-8')):08x}"


#: the server-side TCP keepalive of a lease's session: idle 10 s, then a probe every 5 s,
#: 3 unanswered probes end it (the values pg_connect gives the client's side)
LEASE_KEEPALIVES = (("tcp_keepalives_idle", 10), ("tcp_keepalives_interval", 5),
                    ("tcp_keepalives_count", 3))


class _Lease:
    """A session advisory lock on a connection of its own, for the life of a worker.

    The lock lives as long as its session: a stopped process keeps it (its kernel still
    answers for the socket), but the server can end the session while the process lives
    (``pg_terminate_backend``, ``idle_session_timeout``, a fault on that one connection) —
    and with it the lease, which :meth:`held` then reports lost."""

    def __init__(self, url: str) -> None:
        self._conn = connect(url)
        self._lock = threading.Lock()
        # the lease's session is idle for the worker's whole life: a server-wide
        # idle_session_timeout would end it (and the lease) under a live worker
        if self._conn.info.server_version >= 140000:  # the setting is PostgreSQL 14's
            self._conn.execute("SET idle_session_timeout = 0")
        # the server's own keepalive on this session (the client's, in pg_connect, does not
        # make the server notice): a dead host's lease is dropped ~25 s after it went
        # silent, not after the OS's default two hours (ignored on a Unix socket)
        for setting, value in LEASE_KEEPALIVES:
            self._conn.execute(f"SET {setting} = {value}")
        for _ in range(8):
            self.id = "w-" + uuid.uuid4().hex[:16]
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s, %s)",
                                     (LEASE_LOCKS, lease_key(self.id))).fetchone()
            if row is not None and row[0]:
                return
        self._conn.close()
        raise JournalError("could not take a worker lease (8 ids in a row were held)")

    def held(self) -> bool:
        """Whether the lease's session still holds its session locks (only it could release
        them). The session is idle between calls: nothing arrives on its socket unless the
        server ended it (a terminated backend sends its FATAL and closes) or the
        connection broke — so a socket with nothing to read is held, without a round trip
        on every governed call; one with something to read is asked (``SELECT 1``: a
        session that answers holds them, one that was ended does not)."""
        import psycopg

        with self._lock:
            if self._conn.closed:
                return False
            try:
                ready, _, _ = select.select([self._conn.fileno()], [], [], 0)
            except (OSError, ValueError, psycopg.Error):
                ready = [True]  # cannot tell: ask
            if not ready:
                return True
            try:
                self._conn.execute("SELECT 1")
            except psycopg.Error:
                return False
            return True

    def release(self) -> None:
        if self._conn.closed:
            return
        import psycopg

        try:  # at once (closing alone drops the locks when the server notices, soon after)
            self._conn.execute("SELECT pg_advisory_unlock_all()")
        except psycopg.Error:
            pass  # a broken connection: the server drops its locks with it
        finally:
            self._conn.close()


#: the usage scopes also counted in the server's seconds (:data:`SERVER_SCOPE_PREFIX`): an
#: intent's (``tests/security/test_549``), an agent's refusals (``test_608``)
SERVER_WINDOWED = ("*", *USAGE_FIELDS, REFUSALS_SCOPE)


def _cap_window(cap: UsageCap) -> tuple[str, tuple[Any, ...]]:
    """The query of a cap's window (:data:`.pg_schema.USAGE_WINDOW_SQL`'s row): a limit's
    and an agent's refusals' (``window`` set, a scope of :data:`SERVER_WINDOWED`) in the
    server scopes, up to the server's clock now (``tests/security/test_549``,
    ``test_608``); a budget's, a quota's record's from its ``since``."""
    if cap.window is not None and cap.scope in SERVER_WINDOWED:
        scope = SERVER_SCOPE_PREFIX + cap.scope
        return pg_schema.SERVER_WINDOW_SQL, (scope, cap.subject, scope, cap.subject,
                                             float(cap.window))
    return pg_schema.USAGE_WINDOW_SQL, (cap.scope, cap.subject, cap.scope, cap.subject,
                                        iso(cap.since)[:19])


def _recent_sizes(kind: str, actor: str, *, since: datetime, limit: int | None,
                  window: float | None) -> tuple[str, tuple[Any, ...]]:
    """The query of a quota's recent events (:meth:`PostgresJournal.recent_sizes`, an
    :class:`UploadCap` under the append lock): with ``window``, those of the ``window``
    seconds up to the server's clock now, by the server's second of each append
    (``tests/security/test_607``); else those whose ``at`` is at or after ``since``."""
    if window is not None and kind in pg_schema.SERVER_TIMED_KINDS:
        # the runtime's now: the window's start (window_start) is now less the window
        now = since + timedelta(seconds=window) - timedelta(microseconds=1)
        return pg_schema.SERVER_RECENT_SIZES_SQL, (iso(now), kind, actor, float(window),
                                                   limit)
    return pg_schema.RECENT_SIZES_SQL, (kind, actor, iso(since), limit)


class PostgresJournal:
    """One PostgreSQL journal. Safe to share between threads (one connection, locked)."""

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        import psycopg

        self.url = url
        #: opened only to read (a command that only reads): :meth:`append` refuses, and
        #: the session's transactions are read only, so the server refuses any write too
        self.read_only = read_only
        self._psycopg = psycopg
        self._lock = threading.RLock()
        #: the schema this journal is (its URL's path resolved once, at open): test_419
        self._schema: str | None = None
        self._conn = connect(url)
        try:
            session = self._session(self._conn, None)
        except psycopg.Error as exc:
            self._conn.close()
            raise JournalError(f"cannot read the journal `{self.location}`: {exc}") from exc
        except BaseException:
            self._conn.close()
            raise
        self._schema, self._backend = session.schema, session.backend
        #: the function, the chain's tables and the claim's index as this journal found
        #: them: each append checks, before its COMMIT, that none moved (read only: none)
        self._pinned = session.pinned
        #: watermark: appends by others this object has noticed, and the head it last saw
        self._foreign, self._known_seq = 0, self.head()[0]
        #: the hash of the journal's first event (None: it held none yet): what a new
        #: session's journal must hold to be this one (:meth:`_same_journal`, test_486)
        self._first: str | None = self.first_hash()
        #: the runs whose ``runs`` row this object committed (an append of theirs that
        #: counts no proposal writes none)
        self._runs = KnownRuns()
        #: durable appends commit without a flush under the lock, then flush (FLUSH_SQL)
        self._flush_apart = session.flush_apart
        self._channel = change_channel(str(session.schema or "public"))
        #: wait_for_change's LISTEN connection (opened by its first call)
        self._listener: psycopg.Connection[tuple[Any, ...]] | None = None
        self._listen_lock = threading.Lock()
        #: the digest key, once read (:meth:`digest_key`)
        self._digest_key: bytes | None = None

    def _session(self, conn: Any, schema: str | None) -> _Session:
        """Set and check everything a session of this journal relies on — at open
        (``schema`` None: its URL's path resolved now) and at each reconnect (the schema it
        opened): one function, so a new session is the session the journal opened
        (:meth:`_reconnect`).

        The ``search_path`` fixed to the journal's schema (test_419), the writer's settings
        (test_420, test_421) or a reader's read-only transactions, the migrations' version
        (test_418), the prepared check of what the appends pin and the schema's objects
        (test_350), whether a durable append flushes apart, and the session's backend (its
        pid and start: a session lost during an append is ended before the append's
        outcome is read). A journal at another version, or altered (to write), is refused
        (the connection is left to the caller to close)."""
        kept = keep_schema(conn, schema)
        if self.read_only:
            conn.execute("SET default_transaction_read_only = on")
        else:
            conn.execute(_writer_settings(conn.info.server_version))
        applied = schema_version(conn)
        if applied != _MIGRATED:
            raise _version_error(self.location, applied, then=None if schema is None else (
                "this worker reconnected to it and stopped writing"))
        pinned: Pin | None = None
        # INVARIANT: no write runs on a schema the migrations did not make (test_350)
        if not self.read_only:
            conn.execute(PREPARE_CHECK_SQL)
            pinned = self._pin(conn)  # before the catalog is read: a change after it moves it
        altered = open_problem(conn) or (
            _ALTERED if pinned is None and not self.read_only else None)
        if altered is not None:
            if not self.read_only:
                raise altered_error(self.location, altered)
            _log.warning("%s", altered_error(self.location, altered, then=READ).message)
        row = conn.execute("SELECT pid, backend_start FROM pg_stat_activity "
                           "WHERE pid = pg_backend_pid()").fetchone()
        return _Session(kept, pinned or UNPINNED,
                        not self.read_only and self._can_flush_apart(conn),
                        (int(row[0]), row[1]) if row is not None else None)

    def _can_flush_apart(self, conn: Any) -> bool:
        """Whether a durable append flushes apart (:data:`FLUSH_SQL`, after its commit):
        only where a flush waits for the disk — the server syncs its WAL (``fsync``) and a
        commit waits for it (``synchronous_commit`` not ``off``) — and this session may
        run it (tried in a transaction rolled back: nothing is written). Elsewhere a flush
        under the lock costs nothing, and the extra statement would (measured with
        ``fsync=off``: 1 worker 123-131 calls/s flushing apart against 139-144)."""
        try:
            fsync = conn.execute("SHOW fsync").fetchone()
            commit = conn.execute("SHOW synchronous_commit").fetchone()
            if (fsync or ("off",))[0] == "off" or (commit or ("off",))[0] == "off":
                return False
            with conn.transaction(force_rollback=True):
                conn.execute(FLUSH_SQL)
        except self._psycopg.Error:
            if conn.closed:
                raise
            return False
        return True

    # --- the session --------------------------------------------------------------

    def _lost(self) -> bool:
        """Whether the journal's session is gone (ended by the server, cut)."""
        return bool(self._conn.closed or self._conn.broken)

    def _live(self) -> None:
        """Make sure the session is there before a statement is sent (under the lock): a
        session the server ended while it idled (``pg_terminate_backend``, a restart, a
        failover) has sent its last message and closed — its socket reads; one with
        nothing to read is taken as live (no round trip), one that reads is asked
        (``SELECT 1``), and a lost one is replaced (:meth:`_reconnect`)."""
        if not self._lost():
            try:  # poll, not select: a busy server's descriptors pass select's 1024
                poller = select.poll()
                poller.register(self._conn.fileno(), select.POLLIN)
                ready = bool(poller.poll(0))
            except (OSError, ValueError, self._psycopg.Error):
                ready = True  # cannot tell: ask
            if not ready:
                return
            try:
                self._conn.execute("SELECT 1")
                return
            except self._psycopg.Error:
                if not self._lost():
                    raise
        self._reconnect()

    def _reconnect(self) -> None:
        """A new session for this journal, under the lock: bounded attempts (waiting
        :data:`RECONNECT_BACKOFF`, doubling), the session set and checked as at open
        (:meth:`_session`), and the head read again — the cached one is not trusted (the
        server may be another after a failover, its head behind): the runs' rows known
        committed are forgotten, and appends by others since are noticed. A server that
        stays away is a JournalError naming the journal (no password)."""
        psycopg = self._psycopg
        with suppress(psycopg.Error):
            self._conn.close()
        why = "no attempt"
        for attempt in range(RECONNECT_ATTEMPTS):
            if attempt:
                time.sleep(min(RECONNECT_BACKOFF * 2 ** (attempt - 1), 2.0))
            try:
                conn = connect(self.url)
            except JournalError as exc:  # the server is away (its message, no password)
                why = exc.message
                continue
            try:
                session = self._session(conn, self._schema)
                self._same_journal(conn)
                head = conn.execute("SELECT seq FROM head WHERE one = 1").fetchone()
            except psycopg.Error as exc:  # lost again while it was set up
                conn.close()
                why = str(exc).strip()
                continue
            except BaseException:  # it answered, and refused: a version, an altered schema
                conn.close()
                raise
            self._conn, self._pinned = conn, session.pinned
            self._backend, self._flush_apart = session.backend, session.flush_apart
            seq = int(head[0]) if head is not None else 0
            if seq != self._known_seq:
                self._foreign += 1
            self._known_seq, self._runs = seq, KnownRuns()
            _log.warning("the journal `%s` lost its session; reconnected (attempt %d)",
                         self.location, attempt + 1)
            return
        raise JournalError(
            f"the journal `{self.location}` lost its session and could not reconnect "
            f"after {RECONNECT_ATTEMPTS} attempts: {why}",
            hint="check that the PostgreSQL server is up and reachable; the next journal "
                 "operation tries again")

    def _same_journal(self, conn: Any) -> None:
        """Refuse a new session whose journal is not the one this object opened.

        INVARIANT: a reconnect goes on writing the journal it lost, never another one at
        the same place (the schema replaced, a restore into a new database behind the same
        name, a failover to another cluster): its first event (an append-only chain's, so
        a replica holding a prefix of it has the same) must be the one this object knows,
        and the digest key, once read, the same (``tests/security/test_486``). A journal
        that held no event when opened takes the first it holds now."""
        row = conn.execute(FIRST_HASH_SQL).fetchone()
        first = None if row is None else str(row[0])
        why = None
        if self._first is not None and first != self._first:
            why = "its first event is another's" if first is not None else "it holds no event"
        elif self._digest_key is not None:
            key = conn.execute("SELECT key FROM journal_keys WHERE name = %s",
                               (DIGEST_KEY_NAME,)).fetchone()
            if key is None or bytes(key[0]) != self._digest_key:
                why = "its digest key is another's"
        if why is not None:
            raise JournalError(
                f"the journal `{self.location}` lost its session, and the journal found "
                f"there on reconnecting is not the journal this worker opened ({why}): "
                "nothing is written to it",
                hint="check which database the URL now reaches; restart the worker to "
                     "open the journal there as a new one")
        self._first = first

    def _read(self, run: Callable[[Any], _T]) -> _T:
        """``run(connection)`` under the lock, on a live session; once more on a new one
        when the session was lost under it (a read: nothing to settle)."""
        with self._lock:
            self._live()
            try:
                return run(self._conn)
            except (self._psycopg.OperationalError, self._psycopg.InterfaceError):
                if not self._lost():
                    raise
            self._reconnect()
            return run(self._conn)

    @property
    def location(self) -> str:
        return redact(self.url)

    def close(self) -> None:
        with self._listen_lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
        with self._lock:
            self._conn.close()

    def __enter__(self) -> PostgresJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ------------------------------------------------------------------

    def append(self, events: Sequence[NewEvent], *, flush: bool = True) -> list[AuditEvent]:
        """Append events atomically and durably; all or none are written.

        Where a flush waits for the disk (:meth:`_can_flush_apart`) the transaction
        commits with ``synchronous_commit = off``: the append lock (a transaction lock) is
        released at the commit, so the next writer does not wait for this one's WAL flush;
        ``flush=True`` (the default) then makes it durable before returning with
        :data:`FLUSH_SQL`, a transaction of its own (outside the lock) whose commit flushes
        the WAL up to and past this one — the writers' flushes overlap and merge (group
        commit) instead of queueing behind the lock, as the SQLite journal's fsync does
        after its write lock. Elsewhere a durable append's commit flushes, as before.
        ``flush=False``: ``synchronous_commit = off`` and no flush of its own — kept if
        this process dies; the server's next flushed commit flushes it too (WAL order)."""
        if not events:
            return []
        if self.read_only:
            raise read_only_error(f"the journal `{self.location}`")
        encoded = encode(events)  # the payloads' text and hashes: before the lock
        caps = append_caps(events)
        # an append whose caps a limit decides, that makes one more item wait for a person
        # (WaitingCap: counted under the lock), an upload within its quotas (UploadCap),
        # or that begins a run twice (refused, and
        # which run it names depends on the journal), or that takes back an approval
        # (ApprovalGuard revoking, probed in Python), takes the two round trips below; one
        # that must find its workflow run not ended (NewEvent.if_run_open: a request for an
        # approval, a walker's steps) is checked by cradle_append (migration 15), and one
        # whose intent uses an approval no revoke may precede by it too (migration 16) —
        # or here at once, when the append itself ends the run first
        if not caps and not append_waiting(events) and not append_uploads(events) and begun_run(
                events, [False] * len(new_runs(events))) is None \
                and not any(g.revoking for g in append_approvals(events)) \
                and not expiring_uses(events):  # test_305, test_595
            ended = ended_run(events, [""] * len(open_runs(events)))
            if ended is not None:
                raise RunEnded(ended)
            written = self._settled_append(
                events, encoded, flush, lambda: self._append_one_trip(events, encoded, flush))
        else:
            written = self._settled_append(events, encoded, flush,
                                           lambda: self._append_two_trips(events, encoded,
                                                                          caps, flush))
        if self._first is None:  # a journal opened empty: its first event, once (test_486)
            self._first = written[0].hash if written[0].seq == 1 else self.first_hash()
        return written

    def _settled_append(self, events: Sequence[NewEvent], encoded: Sequence[Encoded],
                        flush: bool, attempt: Callable[[], list[AuditEvent]]
                        ) -> list[AuditEvent]:
        """``attempt()`` (:meth:`_pinned_append`) on a live session (:meth:`_live`: one
        the server ended while it idled is replaced before anything is sent).

        INVARIANT: an append whose session was lost while it ran is never sent again
        blindly — its COMMIT may have been carried out with no answer back. Its outcome is
        settled first (:meth:`_settle`: the old session ended, then the events read back
        by their content): found, they are the append's (flushed on the new session when
        durable); not there, the append was not written and can never be (its session is
        gone), and it is tried on the new session; neither known — a
        :class:`~cradle_kg.errors.JournalOutcomeUnknown`. Bounded tries."""
        found: list[AuditEvent] | None = None
        floor = 0
        for _ in range(RECONNECT_ATTEMPTS):
            with self._lock:
                try:
                    self._live()
                except JournalError as exc:
                    if found is None:
                        raise
                    raise JournalError(  # committed (read back), not known flushed
                        f"the journal `{self.location}` could not confirm that the events "
                        f"up to seq {found[-1].seq} are durable: {exc.message}",
                        hint="they are committed; check the server (its next flushed "
                             "commit flushes them too)") from exc
                if found is None:
                    # a lower bound of the head the append chains onto: the events it may
                    # have written are after it (a failed-over server holds a prefix of
                    # the old one's). Kept while its committed events wait for their flush:
                    # the head read since is past them
                    floor = self._known_seq
            try:
                if found is None:
                    return self._pinned_append(attempt)
                if flush and self._flush_apart:
                    with self._lock:
                        self._flush(found[-1].seq, self._psycopg)
                return found
            except _SessionLost as lost:
                # None: not written (a commit the server lost before its flush, too)
                found = self._settle(events, encoded, floor, lost)
        raise JournalError(
            f"the journal `{self.location}` lost its session at each of "
            f"{RECONNECT_ATTEMPTS} tries of an append"
            + (f"; its events up to seq {found[-1].seq} are committed, their flush not "
               "confirmed" if found else "; it was not written"),
            hint="check the PostgreSQL server and the network to it")

    def _settle(self, events: Sequence[NewEvent], encoded: Sequence[Encoded], floor: int,
                lost: _SessionLost) -> list[AuditEvent] | None:
        """The outcome of an append whose session was ``lost``: its events as the journal
        holds them, or None when it holds none of them (and never will). On a new session
        the old one is ended first (``pg_terminate_backend`` of its backend, if it still
        runs — a cut network leaves it running, its transaction open — then waited for),
        so its transaction has committed or never will; then the append's first event is
        looked for after ``floor`` by everything it was hashed from (run, kind, subject,
        actor, time, payload hash, idempotency key), and the events after it compared."""
        psycopg = self._psycopg
        with self._lock:
            try:
                self._live()
                if lost.backend is None:
                    raise JournalOutcomeUnknown(self._unknown("its session's backend is not "
                                                              "known"))
                self._end_backend(lost.backend)
                return self._read_back(events, encoded, floor)
            except JournalOutcomeUnknown:
                raise
            except JournalError as exc:
                raise JournalOutcomeUnknown(self._unknown(exc.message)) from exc
            except psycopg.Error as exc:
                raise JournalOutcomeUnknown(self._unknown(str(exc).strip())) from exc

    def _unknown(self, why: str) -> str:
        return (f"the journal `{self.location}` lost its session during an append, and "
                f"whether it was written is not known: {why}; read the journal before "
                "acting again (`cradle-kg audit verify`, the run's events)")

    def _end_backend(self, backend: tuple[int, Any]) -> None:
        """End the backend (pid, start) of a lost session if it still runs, and wait until
        it is gone (:data:`OLD_SESSION_WAIT`)."""
        match = "FROM pg_stat_activity WHERE pid = %s AND backend_start = %s"
        self._conn.execute(f"SELECT pg_terminate_backend(pid) {match}", backend)
        deadline = time.monotonic() + OLD_SESSION_WAIT
        while self._conn.execute(f"SELECT count(*) {match}", backend).fetchone() != (0,):
            if time.monotonic() > deadline:
                raise JournalOutcomeUnknown(self._unknown(
                    f"its old session (backend {backend[0]}) did not end"))
            time.sleep(0.02)

    def _read_back(self, events: Sequence[NewEvent], encoded: Sequence[Encoded],
                   floor: int) -> list[AuditEvent] | None:
        """``events`` as the journal holds them after ``floor``, or None (see
        :meth:`_settle`). Found twice there (an identical append by another writer, to
        the microsecond): not known which is this one's — JournalOutcomeUnknown."""
        first, enc = events[0], encoded[0]
        starts = self._conn.execute(
            "SELECT seq FROM events WHERE subject = %s AND kind = %s AND run_id = %s "
            "AND actor = %s AND at = %s AND payload_hash = %s "
            "AND idem_key IS NOT DISTINCT FROM %s AND seq > %s ORDER BY seq",
            (first.subject, first.kind, first.run_id, first.actor, enc.at,
             enc.payload_hash, first.idem_key, floor)).fetchall()
        blocks = []
        for (start,) in starts:
            rows = self._conn.execute(
                f"SELECT {_COLS}, idem_key FROM events WHERE seq >= %s AND seq < %s "
                "ORDER BY seq", (start, start + len(events))).fetchall()
            if len(rows) == len(events) and all(
                    (r[2], r[3], r[4], r[5], r[6], r[8], r[11])
                    == (new.run_id, new.kind, new.subject, new.actor, e.at, e.payload_hash,
                        new.idem_key)
                    for r, new, e in zip(rows, events, encoded, strict=True)):
                blocks.append(rows)
        if len(blocks) > 1:
            raise JournalOutcomeUnknown(self._unknown(
                f"its events are in the journal {len(blocks)} times (from seq "
                f"{', '.join(str(b[0][0]) for b in blocks)})"))
        if not blocks:
            _log.warning("the journal `%s` lost its session during an append, which was "
                         "not written: it is tried again", self.location)
            return None
        _log.warning("the journal `%s` lost its session during an append, which was "
                     "committed (seq %s to %s)", self.location, blocks[0][0][0],
                     blocks[0][-1][0])
        return [self._row(r[:11]) for r in blocks[0]]

    def _append_one_trip(self, events: Sequence[NewEvent], encoded: Sequence[Encoded],
                         flush: bool) -> list[AuditEvent]:
        """:meth:`append` in one round trip (:mod:`.pg_append`): ``BEGIN``, the server's
        ``cradle_append`` (the lock, the head, the guards, the hashes, the events, the head
        moved and its ``pg_notify``), the derived state, ``COMMIT`` — one query string, so
        the append lock is held only while the server works, never while it waits for this
        client. The server's hashes are checked against :func:`~.chain.event_hash` (a
        function that hashes otherwise is refused loudly; the append is committed)."""
        psycopg = self._psycopg
        parts = [hash_parts(run_id=new.run_id, kind=new.kind, subject=new.subject,
                            actor=new.actor, at=enc.at, payload_hash=enc.payload_hash,
                            idem_key=new.idem_key) for new, enc in zip(events, encoded,
                                                                       strict=True)]
        columns = [(new.run_id, new.kind, new.subject, new.actor, enc.at, enc.payload_text,
                    enc.payload_hash, new.idem_key, *part)
                   for new, enc, part in zip(events, encoded, parts, strict=True)]
        guarded = [(e.subject, int(e.if_last)) for e in events if e.if_last is not None]
        fresh = new_runs(events)
        # the derived state, its seqs pending (the server numbers the events)
        runs: dict[str, list[int]] = {}
        statements: list[pg_schema.Statement] = []
        settled = settled_intents(events)
        for i, (new, enc) in enumerate(zip(events, encoded, strict=True)):
            pending = PendingSeq(i + 1)
            count_run(runs, seq=pending, run_id=new.run_id, kind=new.kind)
            statements.extend(pg_schema.derived_statements(
                seq=pending, run_id=new.run_id, kind=new.kind, subject=new.subject,
                at=enc.at, payload=new.payload, settled=i in settled))
        with self._lock:
            needed = self._runs.needed(runs, self._known_seq)
            # the rows of runs this object committed are left out: sound only on the
            # journal it committed them to, whose head is not behind the last it saw
            floor = self._known_seq if len(needed) < len(runs) else 0
            try:
                row = self._one_trip(events, columns, guarded, fresh, floor,
                                     [*statements, *pg_schema.runs_statements(needed)], flush)
            except _HeadBehind:  # another journal at this place: forget this one's runs
                self._runs, self._known_seq = KnownRuns(), 0
                row = self._one_trip(events, columns, guarded, fresh, 0,
                                     [*statements, *pg_schema.runs_statements(runs)], flush)
            first, prev, hashes = int(row[0]), str(row[1]), list(row[2])
            if first != self._known_seq:
                self._foreign += 1
            written: list[AuditEvent] = []
            seq = first
            for new, enc, server_hash in zip(events, encoded, hashes, strict=True):
                seq += 1
                event, _ = self._event(seq, prev, new, enc)
                if event.hash != server_hash:  # committed: say so, loudly
                    raise JournalError(
                        f"the journal `{self.location}` hashed event {seq} as "
                        f"{server_hash}, not {event.hash}: its `cradle_append` function "
                        "does not compute the chain's hash",
                        hint="run `cradle-kg audit verify`")
                written.append(event)
                prev = event.hash
            self._known_seq = seq
            self._runs.committed(runs, seq)
            if flush and self._flush_apart:
                self._flush(seq, psycopg)
            return written

    def _pin(self, conn: Any) -> Pin | None:
        """What this journal's appends rely on, as it is now (:data:`.pg_objects.PIN_SQL`),
        or None when ``cradle_append`` is not the migrations' function (or a table or the
        index is missing)."""
        row = conn.execute(PIN_SQL).fetchone()
        if row is None or row[2] != APPEND_LINE:
            return None
        try:
            return Pin.of(row)
        except ValueError:  # a table or the index missing: the catalog's read names it
            return None

    def _pinned_append(self, append: Callable[[], list[AuditEvent]]) -> list[AuditEvent]:
        """``append()``; once more when something pinned moved but the schema is the
        migrations' still (a ``GRANT`` on the function, a ``VACUUM FULL`` of a table:
        pinned anew). Refused, nothing written, when it is not (``test_350``)."""
        for _ in range(2):
            try:
                return append()
            except _SchemaMoved:
                try:
                    with self._lock:
                        # INVARIANT: no write on a schema a newer release migrated (test_418)
                        applied = schema_version(self._conn)
                        if applied != _MIGRATED:
                            raise _version_error(self.location, applied,
                                                 then=NOT_WRITTEN) from None
                        pinned = self._pin(self._conn)
                        problem = open_problem(self._conn) or (
                            _ALTERED if pinned is None else None)
                except self._psycopg.Error as exc:
                    raise JournalError(f"cannot read the journal `{self.location}`: "
                                       f"{str(exc).strip()}") from exc
                if problem is not None:
                    raise altered_error(self.location, problem, then=NOT_WRITTEN) from None
                assert pinned is not None  # INVARIANT: no problem, so the function's
                self._pinned = pinned
        raise altered_error(self.location, "the journal's schema moved at each try",
                            then=NOT_WRITTEN)

    def _one_trip(self, events: Sequence[NewEvent], columns: list[tuple[Any, ...]],
                  guarded: list[tuple[str, int]], fresh: list[str], floor: int,
                  tail: list[pg_schema.Statement], flush: bool) -> tuple[Any, ...]:
        """The one message of :meth:`_append_one_trip`: ``cradle_append``'s row.

        Its statements go as one query string (bound here, by psycopg's client-side
        binding), so the server has all of them before the lock is taken: in a pipeline
        each statement is sent as it is issued, and the server, the lock taken, waited for
        the rest of them (measured: ~0.65 backends on average ``active`` in ``ClientRead``
        with 4 workers)."""
        psycopg = self._psycopg
        conn = self._conn
        row: Any = None
        used = append_approvals(events)  # a use's guards only: a revoke takes two trips
        try:
            client = psycopg.ClientCursor(conn)
            text = ["BEGIN"]
            # INVARIANT: where a flush waits for the disk, none under the append lock
            if self._flush_apart or not flush:
                text.append("SET LOCAL synchronous_commit TO OFF")
            at = len(text)
            # INVARIANT: the lock, then the head, the guards and the events, in one
            # server-side call (cradle_append); derived state in the same transaction
            text.append(client.mogrify(pg_append.CALL_SQL, pg_append.call_args(
                columns, guarded, fresh, open_runs(events), [g.approval_id for g in used],
                floor, self._channel)))
            # INVARIANT: the function that ran is the one pinned (test_350): else no COMMIT
            text.append(self._pinned.check_sql())
            text.extend(client.mogrify(*pg_append.bind_pending(sql, args, len(events)))
                        for sql, args in tail)
            text.append("COMMIT")
            with client:
                client.execute(";\n".join(text))
                for _ in range(at):
                    client.nextset()
                row = client.fetchone()
        except psycopg.errors.UniqueViolation as exc:
            self._rollback()
            raise self._violation(events, exc) from exc
        except psycopg.Error as exc:
            if self._lost():  # its outcome is not known: settled by the caller
                raise _SessionLost(self._backend) from exc
            self._rollback()
            detail = exc.diag.message_detail or ""
            try:
                refusal = _refusal(str(exc.sqlstate), detail, events, guarded, fresh, used)
            except (ValueError, IndexError):  # a detail no append it was given can have
                refusal = altered_error(self.location, (
                    f"the journal's function `cradle_append` answered `{exc.sqlstate}` with "
                    f"the detail `{detail[:40]}`, which names nothing of the append"),
                    then=NOT_WRITTEN)  # test_350: replaced after this journal opened
            if refusal is None and ALTERED_MARK in str(exc):  # not what was pinned
                refusal = _SchemaMoved()
            if refusal is not None:
                raise refusal from None
            raise JournalError(f"cannot write the journal `{self.location}`: "
                               f"{str(exc).strip()}") from exc
        except BaseException:
            self._rollback()
            raise
        if row is None:  # pragma: no cover - the function returns one row
            raise JournalError(f"the journal `{self.location}` returned no head")
        return tuple(row)

    def _flush(self, seq: int, psycopg: Any) -> None:
        try:
            self._conn.execute(FLUSH_SQL)
        except psycopg.Error as exc:
            if self._lost():  # committed, not known flushed: settled by the caller
                raise _SessionLost(self._backend) from exc
            raise JournalError(
                f"the journal `{self.location}` could not confirm that the events "
                f"up to seq {seq} are durable: {str(exc).strip()}",
                hint="they are committed; check the server (its next flushed "
                     "commit flushes them too)") from exc

    def _append_two_trips(self, events: Sequence[NewEvent], encoded: Sequence[Encoded],
                          caps: list[UsageCap], flush: bool) -> list[AuditEvent]:
        """:meth:`append` in two round trips (BEGIN, the lock, the head, the caps' usage;
        then every row and COMMIT): the caps' limits are decided here, under the lock."""
        psycopg = self._psycopg
        with self._lock:
            conn = self._conn
            try:
                # two round trips: BEGIN + the lock + the head, then every row + COMMIT
                with conn.pipeline() as pipe, conn.cursor() as cur, conn.cursor() as top, \
                        ExitStack() as stack:
                    cur.execute("BEGIN")
                    # INVARIANT: where a flush waits for the disk, none under the append
                    # lock: a durable append is flushed after its commit (FLUSH_SQL),
                    # before append returns
                    if self._flush_apart or not flush:
                        cur.execute("SET LOCAL synchronous_commit TO OFF")
                    # INVARIANT: the lock is taken before the head is read (in a pipeline
                    # each statement still takes its own snapshot, after the one before)
                    cur.execute("SELECT pg_advisory_xact_lock(%s, 0)", (APPEND_LOCK,))
                    # the head, and the latest event of each if_last subject (NewEvent.if_last)
                    guarded = [e.subject for e in events if e.if_last is not None]
                    top.execute(head_sql("%s", len(guarded)), guarded)
                    # INVARIANT: a limit is checked under the lock (see UsageCap): read in
                    # the same round trip, after the lock, so it sees every commit before
                    usage = [stack.enter_context(conn.cursor()) for _ in caps]
                    for cap, cursor in zip(caps, usage, strict=True):
                        cursor.execute(*_cap_window(cap))
                    # INVARIANT: what waits for a person, under the lock too (WaitingCap)
                    waits = append_waiting(events)
                    counted = [[(stack.enter_context(conn.cursor()), sql, args)
                                for sql, args in tasks_sql.waiting_sql("postgresql", w.agent,
                                                                      run=w.run)]
                               for w in waits]
                    for counts in counted:
                        for cursor, sql, args in counts:
                            cursor.execute(sql, args)
                    # INVARIANT: an upload's quotas, under the lock too (UploadCap)
                    uploads = [(up, stack.enter_context(conn.cursor()))
                               for up in append_uploads(events)]
                    for up, cursor in uploads:
                        cursor.execute(*_recent_sizes(up.kind, up.actor, since=up.since,
                                                      limit=up.max_uploads,
                                                      window=up.window))
                    fresh = new_runs(events)
                    begun = [stack.enter_context(conn.cursor()) for _ in fresh]
                    for run_id, cursor in zip(fresh, begun, strict=True):
                        cursor.execute(RUN_BEGUN_SQL.format("%s"), (run_id,))
                    # INVARIANT: a run's end, under the lock too (NewEvent.if_run_open)
                    ending = open_runs(events)
                    ends = [stack.enter_context(conn.cursor()) for _ in ending]
                    for run_id, cursor in zip(ending, ends, strict=True):
                        cursor.execute(RUN_ENDED_SQL.format("%s"), (run_id,))
                    # INVARIANT: an approval used or revoked, under the lock too
                    guards = append_approvals(events)
                    probes = [stack.enter_context(conn.cursor()) for _ in guards]
                    for g, cursor in zip(guards, probes, strict=True):
                        cursor.execute(*guard_probe("postgresql", g))
                    # INVARIANT: an approval's expiry, on the server's clock under the lock
                    # (ApprovalGuard.expires_at): a worker's clock behind does not stretch it
                    expiring = expiring_uses(events)
                    clock = stack.enter_context(conn.cursor()) if expiring else None
                    if clock is not None:
                        clock.execute("SELECT clock_timestamp()")
                    pipe.sync()
                    row = top.fetchone()
                    assert row is not None  # one row, whatever the head
                    if guarded:  # INVARIANT: under the lock, as the caps (NewEvent.if_last)
                        moved = moved_subject(events, [int(v) for v in row[2:]])
                        if moved is not None:
                            raise SubjectMoved(moved)
                    if fresh:  # INVARIANT: under the lock, as the caps (NewEvent.if_new_run)
                        taken = begun_run(events, [(c.fetchone() or (False,))[0]
                                                   for c in begun])
                        if taken is not None:
                            raise RunNotNew(taken)
                    if ending:  # INVARIANT: under the lock, as the caps (if_run_open)
                        ended = ended_run(events, [(c.fetchone() or ("",))[0] for c in ends])
                        if ended is not None:
                            raise RunEnded(ended)
                    if guards:  # INVARIANT: under the lock, as the caps (ApprovalGuard)
                        moved_a = moved_approval(guards, [(c.fetchone() or (False,))[0]
                                                          for c in probes])
                        if moved_a is not None:
                            raise ApprovalMoved(moved_a)
                    if clock is not None:  # INVARIANT: under the lock (test_595)
                        server_now = (clock.fetchone() or (None,))[0]
                        lapsed = (expiring[0] if not isinstance(server_now, datetime)
                                  else expired_use(expiring, server_now.astimezone(UTC)))
                        if lapsed is not None:
                            raise ApprovalMoved(lapsed)
                    if caps:
                        breached = breached_cap(events, caps,
                                                [tuple(c.fetchone() or ()) for c in usage])
                        if breached is not None:
                            raise LimitReached(breached)
                    for wait, counts in zip(waits, counted, strict=True):
                        waiting = sum(int((c.fetchone() or (0,))[0]) for c, _, _ in counts)
                        if waiting >= wait.limit:
                            raise WaitingReached(wait, waiting)
                    for up, cursor in uploads:
                        recent = [recent_size(r) for r in cursor.fetchall()]
                        if up.full(recent):
                            raise UploadsReached(up, recent)
                    seq, prev = ((int(row[0]), str(row[1])) if row[0] is not None
                                 else (0, GENESIS_HASH))
                    first = seq
                    if seq != self._known_seq:
                        self._foreign += 1
                    written: list[AuditEvent] = []
                    rows: list[tuple[Any, ...]] = []
                    runs: dict[str, list[int]] = {}
                    for new, enc in zip(events, encoded, strict=True):
                        seq += 1
                        event, values = self._event(seq, prev, new, enc)
                        written.append(event)
                        rows.append(values)
                        count_run(runs, seq=seq, run_id=new.run_id, kind=new.kind)
                        prev = event.hash
                    # INVARIANT: derived state changes in the transaction that writes its
                    # events (the events first, in one statement; then, per event, what
                    # it changes; then the runs' rows, once per append)
                    statements = pg_schema.events_statements(rows)
                    settled = settled_intents(events)
                    for i, (new, values) in enumerate(zip(events, rows, strict=True)):
                        statements.extend(pg_schema.derived_statements(
                            seq=values[0], run_id=new.run_id, kind=new.kind,
                            subject=new.subject, at=values[6], payload=new.payload,
                            settled=i in settled))
                    statements.extend(pg_schema.runs_statements(self._runs.needed(runs, first)))
                    for sql, args in statements:
                        cur.execute(sql, args)
                    # the head, and the channel's wake-up in the same statement: delivered
                    # to its listeners at the commit (none if rolled back) —
                    # wait_for_change wakes at once, no poll
                    cur.execute("WITH moved AS (INSERT INTO head(one, seq, hash) "
                                "VALUES (1, %s, %s) ON CONFLICT (one) DO UPDATE SET "
                                "seq = excluded.seq, hash = excluded.hash RETURNING seq) "
                                "SELECT pg_notify(%s, seq::text) FROM moved",
                                (seq, prev, self._channel))
                    # INVARIANT: what the rows were written under is what was pinned
                    cur.execute(self._pinned.check_sql())
                    cur.execute("COMMIT")
            except psycopg.errors.UniqueViolation as exc:
                self._rollback()
                raise self._violation(events, exc) from exc
            except psycopg.Error as exc:
                if self._lost():  # its outcome is not known: settled by the caller
                    raise _SessionLost(self._backend) from exc
                self._rollback()
                if ALTERED_MARK in str(exc):  # not what was pinned
                    raise _SchemaMoved from None
                raise JournalError(f"cannot write the journal `{self.location}`: "
                                   f"{str(exc).strip()}") from exc
            except BaseException:
                self._rollback()
                raise
            self._known_seq = seq
            self._runs.committed(runs, seq)
            if flush and self._flush_apart:
                self._flush(seq, psycopg)
            return written

    def _rollback(self) -> None:
        """End a failed append's transaction (nothing of it was written)."""
        try:
            if not self._conn.closed:
                self._conn.execute("ROLLBACK")
        except self._psycopg.Error:
            pass  # a broken connection: the server rolled it back

    def _violation(self, events: Sequence[NewEvent], exc: Any) -> Exception:
        """What a failed append's unique violation means: an idempotency key another
        append claimed first (:class:`IdempotencyKeyTaken`), else a broken journal."""
        keys = [e.idem_key for e in events if e.idem_key]
        if keys and exc.diag.constraint_name == "events_idem_key":
            return IdempotencyKeyTaken(self._taken(keys))
        return JournalError(f"journal integrity error: {exc}")

    def _taken(self, keys: list[str]) -> str:
        rows = self._query("SELECT idem_key FROM events WHERE idem_key = ANY(%s) ORDER BY seq",
                           (keys,))
        return str(rows[0][0]) if rows else keys[0]

    @staticmethod
    def _event(seq: int, prev: str, new: NewEvent, enc: Encoded
               ) -> tuple[AuditEvent, tuple[Any, ...]]:
        """One event, hashed onto ``prev``, and its ``events`` row."""
        payload_text, payload_hash, at = enc.payload_text, enc.payload_hash, enc.at
        event_id = f"evt-{seq:010d}"
        own = event_hash(seq=seq, event_id=event_id, run_id=new.run_id, kind=new.kind,
                         subject=new.subject, actor=new.actor, at=at,
                         payload_hash=payload_hash, prev_hash=prev, idem_key=new.idem_key)
        row = (seq, event_id, new.run_id, new.kind, new.subject, new.actor, at, payload_text,
               payload_hash, prev, own, new.idem_key)
        return AuditEvent.model_construct(
            seq=seq, id=event_id, run_id=new.run_id, kind=new.kind, subject=new.subject,
            actor=new.actor, at=parse_iso(at), payload=new.payload,
            payload_hash=payload_hash, prev_hash=prev, hash=own), row

    # --- reading ------------------------------------------------------------------

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._read(lambda conn: list(conn.execute(sql, args).fetchall()))
        except self._psycopg.Error as exc:
            raise JournalError(f"cannot read the journal `{self.location}`: "
                               f"{str(exc).strip()}") from exc

    @staticmethod
    def _row(row: tuple[Any, ...]) -> AuditEvent:
        import json

        return AuditEvent(
            seq=row[0], id=row[1], run_id=row[2], kind=row[3], subject=row[4],
            actor=row[5], at=parse_iso(row[6]), payload=json.loads(row[7]),
            payload_hash=row[8], prev_hash=row[9], hash=row[10])

    def events(self, *, run_id: str | None = None, since_seq: int = 0,
               batch: int = 5000) -> Iterator[AuditEvent]:
        last = since_seq
        while True:
            if run_id is None:
                rows = self._query(f"SELECT {_COLS} FROM events WHERE seq > %s "
                                   "ORDER BY seq LIMIT %s", (last, batch))
            else:
                rows = self._query(f"SELECT {_COLS} FROM events WHERE run_id = %s AND "
                                   "seq > %s ORDER BY seq LIMIT %s", (run_id, last, batch))
            if not rows:
                return
            for row in rows:
                yield self._row(row)
            if len(rows) < batch:  # the last page: no query for an empty one
                return
            last = rows[-1][0]

    def events_for_subject(self, subject: str, *, run_id: str | None = None,
                           kinds: Sequence[str] = ()) -> list[AuditEvent]:
        sql = events_for_subject_sql(_COLS, "%s", in_run=run_id is not None,
                                     kinds=len(kinds))
        args = (subject, *((run_id,) if run_id is not None else ()), *kinds)
        return [self._row(r) for r in self._query(sql, args)]

    def events_of_kind(self, kind: str) -> list[AuditEvent]:
        return [self._row(r) for r in self._query(
            f"SELECT {_COLS} FROM events WHERE kind = %s ORDER BY seq", (kind,))]

    def watermark(self) -> int:
        seq = self.head()[0]
        with self._lock:
            if seq != self._known_seq:
                self._foreign, self._known_seq = self._foreign + 1, seq
            return self._foreign

    def wait_for_change(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for an append (``LISTEN`` on the journal's
        channel, on a connection of its own, opened by the first call: appends before it
        are not reported). True when one was notified since the previous call — it may
        have come before this call — False on timeout. A listener that fails is dropped
        (reopened by the next call) and the call sleeps out its timeout: the caller's
        poll still finds the change."""
        psycopg = self._psycopg
        with self._listen_lock:
            try:
                if self._listener is None:
                    listener = connect(self.url)
                    try:
                        listener.execute(f'LISTEN "{self._channel}"')
                    except BaseException:
                        listener.close()
                        raise
                    self._listener = listener
                woke = False
                for _ in self._listener.notifies(timeout=max(0.0, timeout), stop_after=1):
                    woke = True
                if woke:  # the rest already queued: one wake-up for all of them
                    for _ in self._listener.notifies(timeout=0):
                        pass
                return woke
            except (psycopg.Error, JournalError):
                if self._listener is not None:
                    self._listener.close()
                    self._listener = None
        time.sleep(max(0.0, timeout))
        return False

    def last_of_kind(self, kind: str) -> AuditEvent | None:
        rows = self._query(f"SELECT {_COLS} FROM events WHERE kind = %s "
                           "ORDER BY seq DESC LIMIT 1", (kind,))
        return self._row(rows[0]) if rows else None

    def last_for_subject(self, subject: str, kind: str, *, not_by: tuple[str, ...] = (),
                         for_run: tuple[str, str] | None = None,
                         for_action: str | None = None,
                         bound_only: bool = False) -> AuditEvent | None:
        sql, args = last_for_subject_sql(kind, _COLS, "%s", not_by=not_by, for_run=for_run,
                                         for_action=for_action, bound_only=bound_only,
                                         dialect="postgresql")
        rows = self._query(sql, (subject, *args))
        return self._row(rows[0]) if rows else None

    def intent_for_key(self, key: str) -> AuditEvent | None:
        rows = self._query(f"SELECT {_COLS} FROM events WHERE idem_key = %s", (key,))
        return self._row(rows[0]) if rows else None

    def claimed_keys(self) -> dict[int, str]:
        """seq -> idempotency key of every event that claimed one."""
        return {int(r[0]): str(r[1]) for r in self._query(
            "SELECT seq, idem_key FROM events WHERE idem_key IS NOT NULL ORDER BY seq")}

    def event_for_key(self, key: str) -> AuditEvent | None:
        return self.intent_for_key(key)

    def run_agent(self, run_id: str) -> str | None:
        rows = self._query("SELECT actor FROM events WHERE run_id = %s AND kind IN "
                           "('proposal.received', 'run.claimed') ORDER BY seq LIMIT 1",
                           (run_id,))
        return str(rows[0][0]) if rows else None

    def latest_outcome(self, run_id: str, proposal_id: str) -> AuditEvent | None:
        """One probe of ``events_outcome`` (whatever the run's or the journal's size)."""
        rows = self._query(
            f"SELECT {_COLS} FROM events WHERE run_id = %s AND kind = 'run.outcome' "
            f"AND {pg_schema.OUTCOME_PROPOSAL} = %s "
            f"AND coalesce(json_typeof({pg_schema.PAYLOAD} -> 'submission'), 'null') = 'null' "
            "ORDER BY seq DESC LIMIT 1", (run_id, proposal_id))
        return self._row(rows[0]) if rows else None

    def recent_sizes(self, kind: str, actor: str, *, since: datetime,
                     limit: int | None,
                     window: float | None = None) -> list[tuple[datetime, int]]:
        """See :meth:`~.journal.Journal.recent_sizes` (index ``events_kind_actor``,
        migration 7; with ``window``, ``server_times_kind_actor``, migration 20, on the
        server's clock: ``tests/security/test_607``)."""
        rows = self._query(*_recent_sizes(kind, actor, since=since, limit=limit,
                                          window=window))
        return [recent_size(r) for r in rows]

    def usage_since(self, *, field: str | None, value: str | None,
                    since: datetime) -> tuple[int, float]:
        """Intents and their declared cost since a time, from the per-second buckets'
        running totals (two index probes at any window; the second holding ``since``
        counts in full: a limit binds early, never late)."""
        if field is not None and not windowed(field):
            raise ValueError(f"no usage field `{field}`")
        scope, subject = ("*", "") if field is None else (field, value)
        rows = self._query(pg_schema.USAGE_WINDOW_SQL,
                           (scope, subject, scope, subject, iso(since)[:19]))
        return window_usage(rows[0])

    def usage_within(self, *, field: str | None, value: str | None, window: float,
                     now: datetime) -> tuple[int, float]:
        """Intents and their declared cost in the ``window`` seconds up to the server's
        clock now (``now``, the runtime's clock, is not read), each counted in the server's
        second of its append: what a limit's cap reads under the append lock
        (:func:`_cap_window`, ``tests/security/test_549``)."""
        if field is not None and field not in SERVER_WINDOWED:
            raise ValueError(f"no usage field `{field}`")
        scope, subject = ("*", "") if field is None else (field, value or "")
        rows = self._query(*_cap_window(UsageCap(scope, subject, since=now, window=window)))
        return window_usage(rows[0])

    def server_time(self) -> datetime | None:
        """The server's clock now (``clock_timestamp()``): what an approval's expiry is
        read against besides the runtime's clock (``tests/security/test_595``)."""
        value = self._query("SELECT clock_timestamp()")[0][0]
        return value.astimezone(UTC) if isinstance(value, datetime) else None

    def usage_total(self, scope: str, subject: str) -> tuple[int, float]:
        """Everything ever counted in one usage bucket (a budget's spend: see
        :meth:`~.journal.Journal.usage_total`): two index probes."""
        rows = self._query(pg_schema.USAGE_WINDOW_SQL,
                           (scope, subject, scope, subject, iso(BEGINNING)[:19]))
        return window_usage(rows[0])

    def usage_top(self, scope: str) -> tuple[str, int, float] | None:
        rows = self._query(pg_schema.USAGE_TOP_SQL, (scope, scope))
        if not rows:
            return None
        return (str(rows[0][0]), *window_usage(rows[0][1:]))

    def run_ids(self) -> list[str]:
        return [r[0] for r in self._query("SELECT run_id FROM runs ORDER BY first_seq")]

    def has_run(self, run_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM runs WHERE run_id = %s", (run_id,)))

    def proposal_runs(self, *, limit: int | None = None, offset: int = 0,
                      newest_first: bool = False) -> tuple[list[str], int]:
        order = "DESC" if newest_first else "ASC"
        rows = self._query(f"SELECT run_id FROM runs WHERE proposals > 0 ORDER BY first_seq "
                           f"{order} LIMIT %s OFFSET %s", (limit, offset))
        total = self._query("SELECT COUNT(*) FROM runs WHERE proposals > 0")[0][0]
        return [r[0] for r in rows], int(total)

    def listed_runs(self, *, keys: list[StateKey] | None = None, limit: int | None = None,
                    offset: int = 0, newest_first: bool = False) -> tuple[list[str], int]:
        rows_sql, count_sql, args = run_state_sql.page("postgresql", keys,
                                                       newest_first=newest_first)
        rows = self._query(rows_sql, (*args, limit, offset))
        return [str(r[0]) for r in rows], int(self._query(count_sql, args)[0][0])

    def run_page(self, run_id: str, *, limit: int, after_seq: int = 0, newest: bool = False,
                 kinds: Sequence[str] = (), marked: bool = False) -> list[AuditEvent]:
        sql = run_state_sql.run_page("postgresql", _COLS, kinds=len(kinds), newest=newest,
                                     marked=marked)
        like = (run_state_sql.SECRET_MARK_LIKE,) if marked else ()
        return [self._row(r) for r in self._query(sql, (run_id, after_seq, *kinds, *like,
                                                        limit))]

    def run_counts(self, run_id: str) -> tuple[int, int, int]:
        row = self._query(run_state_sql.counts("postgresql"), (run_id,))[0]
        return int(row[0]), int(row[1]), int(row[2])

    def max_step(self, run_id: str) -> int:
        rows = self._query(run_state_sql.max_step("postgresql"), (run_id,))
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0

    def run_state_row(self, run_id: str) -> tuple[str, str, int, int, int, str] | None:
        rows = self._query(run_state_sql.one_row("postgresql"), (run_id,))
        return run_state_sql.state_row(rows[0] if rows else None)

    def run_state_groups(self) -> list[tuple[StateKey, int]]:
        return [((int(r[0]), str(r[1]), int(r[2]), str(r[3]), int(r[4]), int(r[5])), int(r[6]))
                for r in self._query(run_state_sql.GROUPS)]

    def approval_requests(self, *, undecided: bool = False, run_id: str | None = None,
                          requested_by: str | None = None, limit: int | None = None,
                          offset: int = 0, decider: Decider | None = None
                          ) -> tuple[list[AuditEvent], int]:
        rows_sql, count_sql, args = tasks_sql.approvals_page(
            "postgresql", _COLS, undecided=undecided, run_id=run_id, requested_by=requested_by,
            decider=decider)
        rows = self._query(rows_sql, (*args, limit, offset))
        total = int(self._query(count_sql, args)[0][0])
        return [self._row(r) for r in rows], total

    def waiting_under_key(self, asked: KeyAsked, *, approved: bool = False,
                          offset: int = 0) -> AuditEvent | None:
        rows_sql, _, args = tasks_sql.approvals_page(
            "postgresql", _COLS, undecided=True, run_id=None, requested_by=asked.agent,
            keyed=asked, unrun=approved)
        rows = self._query(rows_sql, (*args, 1, offset))
        return self._row(rows[0]) if rows else None

    def written_untrusted(self, firsts: Sequence[str], before: int) -> list[list[str]]:
        # INVARIANT: a token holding a NUL is not asked about: PostgreSQL text cannot hold
        # one (so no row's first token does), and as a parameter it failed the look-up —
        # the check failing closed on a tool answer holding one (tests/security/test_548)
        wanted = [t for t in dict.fromkeys(firsts) if "\x00" not in t]
        out: list[list[str]] = []
        for i in range(0, len(wanted), WRITTEN_CHUNK):
            out.extend(written_values(self._query(
                pg_schema.LINEAGE_WRITTEN_READ, (before, wanted[i:i + WRITTEN_CHUNK]))))
        return out

    def latest_budget_sets(self) -> list[AuditEvent]:
        cols = prefixed(_COLS)
        return [self._row(r) for r in self._query(tasks_sql.BUDGET_SETS_SQL.format(cols))]

    def inbox_order(self, kinds: Sequence[str], *, run_id: str | None = None,
                    limit: int | None = None, offset: int = 0,
                    decider: Decider | None = None) -> list[tuple[str, int]]:
        sql, args = tasks_sql.inbox_order("postgresql", kinds, run_id=run_id,
                                          decider=decider)
        return [(str(r[0]), int(r[1])) for r in self._query(sql, (*args, limit, offset))]

    def open_step_requests(self, *, run_id: str | None = None, limit: int | None = None,
                           offset: int = 0, agent: str | None = None,
                           decider: Decider | None = None) -> tuple[list[AuditEvent], int]:
        rows_sql, count_sql, args = tasks_sql.steps_page("postgresql", _COLS, run_id=run_id,
                                                         agent=agent, decider=decider)
        rows = self._query(rows_sql, (*args, limit, offset))
        total = int(self._query(count_sql, args)[0][0])
        return [self._row(r) for r in rows], total

    def waiting(self, agent: str, *, run: str | None = None) -> int:
        return sum(int(self._query(sql, args)[0][0])
                   for sql, args in tasks_sql.waiting_sql("postgresql", agent, run=run))

    def run_repairs(self, run_id: str) -> int:
        rows = self._query(tasks_sql.REPAIRS_SQL.format("%s"), (run_id,))
        return int(rows[0][0]) if rows else 0

    def human_tasks(self, *, run_id: str | None = None, include_resolved: bool = False,
                    limit: int | None = None, offset: int = 0,
                    decider: Decider | None = None
                    ) -> tuple[list[tuple[AuditEvent, AuditEvent | None]], int]:
        rows_sql, count_sql, args = tasks_sql.page("postgresql", _COLS, run_id=run_id,
                                                   include_resolved=include_resolved,
                                                   decider=decider)
        rows = self._query(rows_sql, (*args, limit, offset))
        total = int(self._query(count_sql, args)[0][0])
        n = len(_COLS.split(","))
        return [(self._row(r[:n]), self._row(r[n:]) if r[n] is not None else None)
                for r in rows], total

    def approval_subjects(self, *, run_id: str | None = None) -> list[str]:
        if run_id is None:
            rows = self._query(APPROVAL_SUBJECTS_SQL.format(run=""))
        else:
            rows = self._query(APPROVAL_SUBJECTS_SQL.format(run=" WHERE e.run_id = %s"),
                               (run_id,))
        return [str(r[0]) for r in rows]

    def subject_events(self, subject: str, kind: str | None, *, limit: int,
                       newest: bool = True, run_id: str | None = None) -> list[AuditEvent]:
        sql, args = subject_events_sql(_COLS, "%s", kind, newest=newest,
                                       in_run=run_id is not None)
        run = () if run_id is None else (run_id,)
        return [self._row(r) for r in self._query(sql, (subject, *args, *run, limit))]

    def approval_request(self, approval_id: str) -> AuditEvent | None:
        rows = self._query(APPROVAL_REQUEST_SQL.format(cols=prefixed(_COLS), p="%s"),
                           (approval_id,))
        return self._row(rows[0]) if rows else None

    def approval_place(self, approval_id: str) -> tuple[str, str] | None:
        rows = self._query("SELECT a.subject, e.run_id FROM approval_ids a JOIN events e "
                           "ON e.seq = a.seq WHERE a.approval_id = %s", (approval_id,))
        return (str(rows[0][0]), str(rows[0][1])) if rows else None

    def approval_moved(self, guard: ApprovalGuard) -> bool:
        rows = self._query(*guard_probe("postgresql", guard))
        return bool(rows and rows[0][0])

    def approval_uses(self, approval_id: str, run_id: str, *, after: int, before: int
                      ) -> int:
        rows = self._query(tasks_sql.approval_uses("postgresql"),
                           (run_id, after, before, approval_id))
        return int(rows[0][0]) if rows else 0

    def subject_last(self, subject: str) -> int:
        rows = self._query(SUBJECT_LAST_SQL.format("%s"), (subject,))
        return int(rows[0][0]) if rows else 0

    def head(self) -> tuple[int, str]:
        rows = self._query("SELECT seq, hash FROM head WHERE one = 1")
        return (int(rows[0][0]), str(rows[0][1])) if rows else (0, GENESIS_HASH)

    def digest_key(self) -> bytes:
        if self._digest_key is None:
            with self._lock:
                key = os.urandom(DIGEST_KEY_BYTES)
                try:  # INVARIANT: inserted only if absent, then read: one key per journal
                    # (so it is sent again as it is on a new session: see _read)
                    self._read(lambda conn: conn.execute(
                        "INSERT INTO journal_keys(name, key) VALUES (%s, %s) "
                        "ON CONFLICT (name) DO NOTHING", (DIGEST_KEY_NAME, key)))
                except self._psycopg.Error as exc:  # the primary line: a DETAIL may quote
                    # the row (`Failing row contains …`), which holds the key
                    why = exc.diag.message_primary or type(exc).__name__
                    raise JournalError(f"cannot write the digest key of the journal "
                                       f"`{self.location}`: {why}") from None
                self._digest_key = self.stored_digest_key()
        assert self._digest_key is not None  # inserted above, or by another writer
        return self._digest_key

    def stored_digest_key(self) -> bytes | None:
        rows = self._query("SELECT key FROM journal_keys WHERE name = %s", (DIGEST_KEY_NAME,))
        return bytes(rows[0][0]) if rows else None

    def first_hash(self) -> str | None:
        rows = self._query(FIRST_HASH_SQL)
        return str(rows[0][0]) if rows else None

    def dangling_intents(self) -> list[tuple[int, str]]:
        return [(int(r[0]), str(r[1]))
                for r in self._query("SELECT seq, subject FROM open_intents ORDER BY seq")]

    # --- verifying ----------------------------------------------------------------

    def verify(self, *, anchor: Anchor | None = None, progress: Progress | None = None,
               semantics: bool = False) -> ChainReport:
        from .pg_verify import verify_postgres

        return verify_postgres(self.url, anchor=anchor, progress=progress,
                               semantics=semantics, schema=self._schema)

    # --- workers ------------------------------------------------------------------

    def acquire_lease(self) -> _Lease:
        return _Lease(self.url)

    def worker_alive(self, worker_id: str) -> bool:
        if not _WORKER_ID.match(worker_id):
            return False
        key = lease_key(worker_id)

        def probe(conn: Any) -> bool:
            got = conn.execute("SELECT pg_try_advisory_lock(%s, %s)",
                               (LEASE_LOCKS, key)).fetchone()
            if got is not None and got[0]:
                conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LEASE_LOCKS, key))
                return False
            return True

        try:
            return self._read(probe)
        except self._psycopg.Error as exc:
            raise JournalError(f"cannot read the journal `{self.location}`: "
                               f"{str(exc).strip()}") from exc

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """A session advisory lock ``name`` on a connection of its own, held while the
        block runs (a recovery pass: serialised across every worker on the journal).

        INVARIANT: it waits for another worker's hold however long (``lock_timeout =
        0``), and its session is not ended for being idle while the block runs
        (``idle_session_timeout = 0``, as the lease's) — defaults of the database, role or
        URL cut them (``tests/security/test_421``); a server error is a JournalError."""
        conn = connect(self.url)
        try:
            try:
                if conn.info.server_version >= 140000:  # the setting is PostgreSQL 14's
                    conn.execute("SET idle_session_timeout = 0")
                conn.execute("SET lock_timeout = 0")
                conn.execute("SELECT pg_advisory_lock(%s, %s)",
                             (NAMED_LOCKS, int4(zlib.crc32(name.encode()))))
            except self._psycopg.Error as exc:
                raise JournalError(f"cannot take the journal's `{name}` lock on "
                                   f"`{self.location}`: {str(exc).strip()}") from exc
            yield
        finally:
            conn.close()


__all__ = ["PostgresJournal"]
