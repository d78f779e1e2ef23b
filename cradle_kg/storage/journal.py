"""The journal's interface: what the runtime, the CLI and the server may ask of a journal.

Two implementations: :class:`~.sqlite.SqliteJournal` (the embedded default, one file in
the home) and :class:`~.postgresql.PostgresJournal` (one database shared by many workers,
possibly on many hosts). Both write the same events with the same hashes byte for byte
(:mod:`.chain`), claim an idempotency key once (a UNIQUE index), keep the derived state
(usage buckets, open intents, approval ids, runs, run states, human tasks, repair counts)
in the append's own transaction and serialise appends, so the head read under the
writer's lock is the head the new events chain onto.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Protocol, runtime_checkable

from ..canonical import canonical_json, sha256_bytes
from ..errors import JournalError
from ..isotime import iso
from ..records import AuditEvent
from .chain import Anchor, ChainReport, Progress
from .counting import BUDGET_SCOPES, counted_keys, intent_cost, window_usage
from .run_state_sql import StateKey
from .tasks_sql import Decider, Dialect, KeyAsked, approval_moved, approval_moved_args

#: the ``since`` of a cap on everything ever counted in a scope (a budget's): earlier than
#: every second the usage buckets hold
BEGINNING = datetime(1, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class UsageCap:
    """A rate or cost limit an intent must fit in, checked by the journal itself in the
    append's serialised transaction (after its writer's lock, before anything is written).

    Gate 1 reads the same counts earlier, outside that lock, so two workers at
    ``max_calls - 1`` can both pass it; the cap is what makes the limit hold. The intents of
    ``scope``/``subject`` (``*``/``""``: every intent) in the window that starts at the
    second holding ``since`` — every worker's, and this append's own — may number at most
    ``max_calls`` and declare at most ``max_cost``. The same for a budget: a
    ``model.reserved`` event carries one cap per applicable budget (``budget.<level>``, its
    subject, :data:`BEGINNING`, ``max_cost`` = the limit), and the reservations and
    charged calls of that scope count as intents do in theirs.

    ``window`` (seconds, a rate or cost limit's): a journal with a server (PostgreSQL)
    reads the window as the ``window`` seconds up to its server's clock now, in the
    intents' server seconds (:data:`.counting.SERVER_SCOPE_PREFIX`), not from ``since``:
    a worker whose clock is off does not move it (``tests/security/test_549``)."""

    scope: str
    subject: str
    since: datetime
    max_calls: int | None = None
    max_cost: float | None = None
    window: float | None = None


@dataclass(frozen=True, slots=True)
class WaitingCap:
    """At most ``limit`` things may wait for a person on ``agent``'s behalf (its undecided
    approvals and the open human steps of its workflow's runs,
    ``input_limits.waiting_per_agent``) before the append that asks for one more: counted
    by the journal itself in the append's serialised transaction, as a :class:`UsageCap`
    is. The runtime counts them earlier, outside the lock, to refuse early; two writers
    asking at once both passed that count (``tests/security/test_202``). ``run``: the run
    the one more waits in; when it is one of the agent's runs on their way to a human step
    (``starting_runs``) it is left out of the count — what now waits in it is counted
    instead, once (a workflow's tool step asking for an approval: ``test_249``)."""

    agent: str
    limit: int
    run: str | None = None


class WaitingReached(Exception):
    """Internal signal: the agent already has ``waiting`` things waiting for a person, at
    or past its :class:`WaitingCap`; nothing of the append was written."""

    def __init__(self, cap: WaitingCap, waiting: int) -> None:
        super().__init__(f"{cap.agent}: {waiting}")
        self.cap = cap
        self.waiting = waiting


def append_waiting(events: Sequence[NewEvent]) -> list[WaitingCap]:
    """The distinct waiting caps an append's events carry (usually none)."""
    return list(dict.fromkeys(e.waiting for e in events if e.waiting is not None))


@dataclass(frozen=True, slots=True)
class UploadCap:
    """An evidence upload of ``size`` bytes by ``actor`` fits its quotas of the last hour
    (``input_limits.evidence_uploads_per_hour`` / ``evidence_bytes_per_hour``: None, no
    limit): the ``kind`` events journaled under ``actor`` at or after ``since``, read as
    one range of ``events_kind_actor`` (at most ``max_uploads`` rows), number fewer than
    ``max_uploads`` and, with this one, hold at most ``max_bytes`` bytes. Counted by the
    journal itself in the append's serialised transaction, as a :class:`WaitingCap` is:
    the runtime counts them earlier, outside the lock, to refuse early; two writers
    uploading at once both passed that count (``tests/security/test_205``).

    ``window`` (seconds, the quotas' hour): a journal with a server (PostgreSQL) reads the
    events in the ``window`` seconds up to its server's clock now, by the server's time of
    each one's append, not from ``since``: a worker whose clock is off does not move it
    (``tests/security/test_607``)."""

    actor: str
    kind: str
    since: datetime
    max_uploads: int | None
    max_bytes: int | None
    size: int
    window: float | None = None

    def full(self, recent: Sequence[tuple[datetime, int]]) -> bool:
        """Whether the blobs ``recent`` (newest first, as the range read them) leave no
        room for this one: the rule of :func:`cradle_kg.evidence.quota_refusal`."""
        if self.max_uploads is not None and len(recent) >= self.max_uploads:
            return True
        return (self.max_bytes is not None
                and sum(size for _, size in recent) + self.size > self.max_bytes)


class UploadsReached(Exception):
    """Internal signal: the actor's uploads of the hour (``recent``, read under the
    writer's lock) leave no room for the one its :class:`UploadCap` describes; nothing of
    the append was written."""

    def __init__(self, cap: UploadCap, recent: list[tuple[datetime, int]]) -> None:
        super().__init__(f"{cap.actor}: {len(recent)}")
        self.cap = cap
        self.recent = recent


def append_uploads(events: Sequence[NewEvent]) -> list[UploadCap]:
    """The upload caps an append's events carry (usually none)."""
    return list(dict.fromkeys(e.uploads for e in events if e.uploads is not None))


class SubjectMoved(Exception):
    """Internal signal: an event appended with ``if_last`` found a newer event about its
    subject (another worker wrote one since it was read); nothing of the append was
    written. The writer reads again and decides again."""

    def __init__(self, subject: str) -> None:
        super().__init__(subject)
        self.subject = subject


class RunNotNew(Exception):
    """Internal signal: an event appended with ``if_new_run`` found an event of its run in
    the journal (another writer began the run since it was read); nothing of the append was
    written. The writer reads the run again: whose it is now."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id


class RunEnded(Exception):
    """Internal signal: an event appended with ``if_run_open`` found its workflow run ended
    (a ``workflow.completed|failed`` in the journal — a person's cancel is a
    ``workflow.failed`` — or earlier in this append); nothing of the append was written.
    A walker reads the run again: it ended under it."""

    def __init__(self, run_id: str) -> None:
        super().__init__(run_id)
        self.run_id = run_id


@dataclass(frozen=True, slots=True)
class ApprovalGuard:
    """An approval an append uses or takes back, checked under the writer's lock
    (:class:`ApprovalMoved`, nothing written, when the other has landed first): a use (an
    action's intent under it) is written only while no revoke of the approval is in the
    journal; a revoke (``revoking``) only while no intent in its run names it. Of a use and
    a revoke racing, one is written, never both (``tests/security/test_305``). The revoke
    of a reusable approval already used carries none: it is written whatever its uses,
    and the use's guard keeps any intent from landing after it (``test_317``)."""

    approval_id: str
    run_id: str
    revoking: bool = False
    #: a revoke's: the seq of the approving decision it read (an intent under the
    #: approval comes after it: the probe reads the run from there on)
    after: int = 0
    #: a use's: the approval's expiry (None: none). A journal with a server (PostgreSQL)
    #: writes the use only while its server's clock is before it, read under the lock
    #: (:class:`ApprovalMoved` if not): a worker whose clock is behind does not stretch
    #: an approval past its expiry (``tests/security/test_595``). SQLite: one host's
    #: clock, the runtime's, read before (unchanged)
    expires_at: datetime | None = None


class ApprovalMoved(Exception):
    """Internal signal: an event appended with an :class:`ApprovalGuard` found its
    approval revoked (a use) or used (a revoke); nothing of the append was written."""

    def __init__(self, guard: ApprovalGuard) -> None:
        super().__init__(guard.approval_id)
        self.guard = guard


class LimitReached(Exception):
    """Internal signal: an intent would take a window past one of its :class:`UsageCap`s
    (another worker's intent got there first); nothing of the append was written."""

    def __init__(self, cap: UsageCap) -> None:
        super().__init__(f"{cap.scope}:{cap.subject}")
        self.cap = cap


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event about to be appended; the journal assigns seq, id and hashes."""

    run_id: str
    kind: str
    subject: str
    actor: str
    at: datetime
    payload: dict[str, Any]
    #: set on intent events only: claims the key for good (UNIQUE)
    idem_key: str | None = None
    #: set on intent and ``model.reserved`` events only: the limits the journal checks
    #: under its writer's lock (:class:`LimitReached`, nothing written, when one would be
    #: exceeded)
    caps: tuple[UsageCap, ...] = ()
    #: set on an event that makes one more thing wait for a person on an agent's behalf
    #: (``approval.requested``, ``workflow.started``): written only while fewer than its
    #: limit wait, checked under the writer's lock (:class:`WaitingReached`, nothing
    #: written, if not)
    waiting: WaitingCap | None = None
    #: set on an upload's ``evidence.collected``: written only while the uploader's
    #: quotas of the hour leave room for it, checked under the writer's lock
    #: (:class:`UploadsReached`, nothing written, if not)
    uploads: UploadCap | None = None
    #: written only if the latest event about ``subject`` is still this seq (0: none),
    #: checked under the writer's lock (:class:`SubjectMoved`, nothing written, if not):
    #: a decision made on what was read is not written over a change it did not see
    if_last: int | None = None
    #: written only if no event of ``run_id`` is in the journal yet (nor earlier in this
    #: append), checked under the writer's lock (:class:`RunNotNew`, nothing written, if
    #: one is): what makes a new run someone's — a workflow's ``workflow.started``, an
    #: agent's ``run.claimed`` — is that run's first event, never one written into a run
    #: another writer began after it was read empty
    if_new_run: bool = False
    #: written only if ``run_id``'s workflow has not ended (no ``workflow.completed|failed``
    #: of the run in the journal, nor earlier in this append), checked under the writer's
    #: lock (:class:`RunEnded`, nothing written, if it has): a walker's step, an answer to
    #: a human step, a cancel are never journaled after the run's end — a cancel written
    #: by another process while this one walked (``tests/security/test_288``)
    if_run_open: bool = False
    #: set on an intent under an approval, and on an approval's revoke: written only while
    #: the other has not landed, checked under the writer's lock (:class:`ApprovalGuard`)
    approval_guard: ApprovalGuard | None = None


class IdempotencyKeyTaken(Exception):
    """Internal signal: an intent for this key is already in the journal."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


@dataclass(frozen=True, slots=True)
class Encoded:
    """What an append writes of one event that no other writer can change — its payload's
    canonical text and hash, its time as text — computed before the writer's lock is
    taken (:func:`encode`): what is left under the lock is what depends on the head."""

    payload_text: str
    payload_hash: str
    at: str


def encode(events: Sequence[NewEvent]) -> list[Encoded]:
    """Each event's :class:`Encoded` (a payload canonical JSON cannot hold raises here,
    before anything is written)."""
    out = []
    for new in events:
        text = canonical_json(new.payload)
        out.append(Encoded(text, sha256_bytes(text.encode("utf-8")), iso(new.at)))
    return out


# --- checked under the writer's lock, by both journals ----------------------------

def append_caps(events: Sequence[NewEvent]) -> list[UsageCap]:
    """The distinct caps an append's intents carry (usually none, or one to three)."""
    return list(dict.fromkeys(cap for event in events for cap in event.caps))


def breached_cap(events: Sequence[NewEvent], caps: Sequence[UsageCap],
                 rows: Sequence[tuple[Any, ...]]) -> UsageCap | None:
    """The first cap that this append's intents (or reservations) would take past its
    limit, or None.

    ``rows[i]``: :data:`.sqlite_derived.USAGE_WINDOW_SQL`'s row for ``caps[i]``, read in
    the append's transaction after its writer's lock (every worker's committed events).
    The append's own events that count in a cap's scope (:func:`.counted_keys`: intents in
    theirs, budget charges in the budget scopes) are added as gate 1 (or the budget
    check) adds the one it checks: the same sums in the same order, so a cap refuses
    exactly what that check would now."""
    for cap, row in zip(caps, rows, strict=True):
        calls, cost = window_usage(row)
        for event in events:
            if (cap.scope, cap.subject) in counted_keys(event.kind, event.run_id,
                                                        event.payload):
                calls, cost = calls + 1, cost + intent_cost(event.payload)
        if cap.max_calls is not None and calls > cap.max_calls:
            return cap
        if cap.max_cost is not None and cost > cap.max_cost:
            return cap
    return None


def moved_subject(events: Sequence[NewEvent], last: Sequence[int]) -> str | None:
    """The subject of the first ``if_last`` event whose subject moved on, or None
    (``last[i]``: :data:`.counting.SUBJECT_LAST_SQL` for the i-th ``if_last``
    event, read in the append's transaction after its writer's lock)."""
    guarded = [event for event in events if event.if_last is not None]
    for event, seq in zip(guarded, last, strict=True):
        if int(seq) != event.if_last:
            return event.subject
    return None


def new_runs(events: Sequence[NewEvent]) -> list[str]:
    """The runs of the append's ``if_new_run`` events, in order (each once): the journal
    reads :data:`.counting.RUN_BEGUN_SQL` for each, after its writer's lock."""
    return list(dict.fromkeys(event.run_id for event in events if event.if_new_run))


def begun_run(events: Sequence[NewEvent], begun: Sequence[Any]) -> str | None:
    """The run of the first ``if_new_run`` event whose run already has an event — in the
    journal (``begun[i]``: :data:`.counting.RUN_BEGUN_SQL` for :func:`new_runs`'s i-th run,
    read in the append's transaction after its writer's lock) or earlier in this append —
    or None."""
    seen = {run for run, found in zip(new_runs(events), begun, strict=True) if found}
    for event in events:
        if event.if_new_run and event.run_id in seen:
            return event.run_id
        seen.add(event.run_id)
    return None


#: the kinds that end a workflow run (its ``run_state.finished``)
RUN_ENDS = ("workflow.completed", "workflow.failed")


def open_runs(events: Sequence[NewEvent]) -> list[str]:
    """The runs of the append's ``if_run_open`` events, in order (each once): the journal
    reads :data:`.counting.RUN_ENDED_SQL` for each, after its writer's lock."""
    return list(dict.fromkeys(event.run_id for event in events if event.if_run_open))


def ended_run(events: Sequence[NewEvent], ended: Sequence[Any]) -> str | None:
    """The run of the first ``if_run_open`` event whose workflow run has ended — in the
    journal (``ended[i]``: :data:`.counting.RUN_ENDED_SQL` for :func:`open_runs`'s i-th
    run, the kind of its end or ``''``) or earlier in this append — or None."""
    done = {run for run, kind in zip(open_runs(events), ended, strict=True) if kind}
    for event in events:
        if event.if_run_open and event.run_id in done:
            return event.run_id
        if event.kind in RUN_ENDS:
            done.add(event.run_id)
    return None


#: the tokens asked about per query of :meth:`Journal.written_untrusted`
WRITTEN_CHUNK = 500


def written_values(rows: Iterable[tuple[Any, ...]]) -> list[list[str]]:
    """The token lists of ``lineage_written`` rows (their JSON ``value``), a malformed one
    left out."""
    out: list[list[str]] = []
    for (text,) in rows:
        try:
            value = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            continue
        if isinstance(value, list) and value and all(isinstance(t, str) for t in value):
            out.append(value)
    return out


def append_approvals(events: Sequence[NewEvent]) -> list[ApprovalGuard]:
    """The approval guards of an append's events, each once: the journal probes each
    (:func:`.tasks_sql.approval_moved`) after its writer's lock."""
    return list(dict.fromkeys(e.approval_guard for e in events if e.approval_guard))


def guard_probe(dialect: Dialect, guard: ApprovalGuard) -> tuple[str, tuple[object, ...]]:
    """The probe of ``guard`` (:func:`.tasks_sql.approval_moved`) and its parameters."""
    return (approval_moved(dialect, revoking=guard.revoking),
            approval_moved_args(guard.approval_id, guard.run_id, revoking=guard.revoking,
                                after=guard.after))


def expiring_uses(events: Sequence[NewEvent]) -> list[ApprovalGuard]:
    """The guards of an append's uses of approvals with an expiry (usually none)."""
    return [g for g in append_approvals(events)
            if not g.revoking and g.expires_at is not None]


def expired_use(guards: Sequence[ApprovalGuard], now: datetime) -> ApprovalGuard | None:
    """The first of ``guards`` whose approval has expired at ``now`` (the server's clock,
    read under the append lock)."""
    return next((g for g in guards if g.expires_at is not None and g.expires_at <= now),
                None)


def moved_approval(guards: Sequence[ApprovalGuard], found: Sequence[Any]
                   ) -> ApprovalGuard | None:
    """The first guard whose probe found the other side landed (``found[i]`` truthy)."""
    return next((g for g, hit in zip(guards, found, strict=True) if hit), None)


class Lease(Protocol):
    """A worker's lease: held for the life of a runtime, dropped when its process dies."""

    @property
    def id(self) -> str: ...

    def held(self) -> bool:
        """Whether this worker still holds its lease: checked before a tool is called (a
        process stalled past the loss of its lease must not act on an intent another
        worker may be reconciling)."""
        ...

    def release(self) -> None: ...


class NoLease:
    """The lease of a runtime opened only to read: none is taken (no ``workers/`` file, no
    advisory lock), and it is never held, so no tool is called under it (fail closed)."""

    id = "read-only"

    def held(self) -> bool:
        return False

    def release(self) -> None:
        return None


def read_only_error(what: str) -> JournalError:
    """What every write to a journal opened read only raises, before anything is written
    (``what``: the journal, or the home whose runtime was opened read only)."""
    return JournalError(f"{what} is open read only: nothing is written",
                        hint="a command that only reads opens the home read only; one that "
                             "writes opens it as its runtime does")


#: the hash of a journal's first event (both journals: the primary key's first entry)
FIRST_HASH_SQL: Final = "SELECT hash FROM events ORDER BY seq LIMIT 1"
#: the name of the digest key's row in ``journal_keys`` (see :meth:`Journal.digest_key`)
DIGEST_KEY_NAME: Final = "digest"
#: how many random bytes a digest key has
DIGEST_KEY_BYTES: Final = 32


@runtime_checkable
class Journal(Protocol):
    """One journal of record (see the module docstring for the guarantees)."""

    #: where it lives, for messages: a file path or a URL without its password
    @property
    def location(self) -> str: ...

    def close(self) -> None: ...

    def __enter__(self) -> Journal: ...

    def __exit__(self, *exc: object) -> None: ...

    # --- writing -------------------------------------------------------------------
    def append(self, events: Sequence[NewEvent], *, flush: bool = True) -> list[AuditEvent]:
        """All or none, durably; :class:`IdempotencyKeyTaken` when a key is claimed,
        :class:`LimitReached` when an intent's cap would be exceeded,
        :class:`SubjectMoved` when an ``if_last`` event's subject has a newer event,
        :class:`RunNotNew` when an ``if_new_run`` event's run has an event.

        ``flush=False``: committed — visible, and kept if this process dies — but not
        flushed to disk on its own; the next flushed commit flushes it too, in order (the
        log is written in order). A power loss before then may lose it, never corrupt."""
        ...

    # --- reading -------------------------------------------------------------------
    def events(self, *, run_id: str | None = None, since_seq: int = 0,
               batch: int = 5000) -> Iterator[AuditEvent]: ...

    def events_for_subject(self, subject: str, *, run_id: str | None = None,
                           kinds: Sequence[str] = ()) -> list[AuditEvent]:
        """The events about ``subject``, oldest first; ``run_id``: only those of that run
        (read without decoding the others: a subject many runs share — an action digest,
        a proposal id — costs a submission its own run's events, ``tests/security/test_63``);
        ``kinds``: only those kinds (the others not decoded either: an action's decisions
        without the approvals an agent asked for it, ``tests/security/test_87``)."""
        ...

    def events_of_kind(self, kind: str) -> list[AuditEvent]: ...

    def last_of_kind(self, kind: str) -> AuditEvent | None: ...

    def last_for_subject(self, subject: str, kind: str, *, not_by: tuple[str, ...] = (),
                         for_run: tuple[str, str] | None = None,
                         for_action: str | None = None,
                         bound_only: bool = False) -> AuditEvent | None:
        """The newest event of ``kind`` about ``subject``: one row decoded, read from the
        newest end of ``events_subject (subject, seq)`` (a blob uploaded N times costs gate
        1 one row, not N: ``tests/security/test_70``). ``not_by``: the newest whose actor
        is none of those (an agent's uploads are no evidence for its proposals, nor for
        another agent's: ``tests/security/test_175``, ``test_180``). ``for_run`` (a run, the
        shared run): only events written in that run, or in the shared run with a payload
        whose ``for_run`` names that run or is absent (``test_199``). ``for_action`` (an
        action's pinned key): only those whose ``for_action`` names it or is absent
        (``test_247``). ``bound_only``: with ``for_run``, uploads naming no run are passed
        over (``evidence_requires_run``: ``test_248``)."""
        ...

    def event_for_key(self, key: str) -> AuditEvent | None: ...

    def intent_for_key(self, key: str) -> AuditEvent | None: ...

    def claimed_keys(self) -> dict[int, str]:
        """seq -> idempotency key of every event that claimed one."""
        ...

    def latest_outcome(self, run_id: str, proposal_id: str) -> AuditEvent | None: ...

    def recent_sizes(self, kind: str, actor: str, *, since: datetime,
                     limit: int | None,
                     window: float | None = None) -> list[tuple[datetime, int]]:
        """The ``at`` and the payload's ``bytes`` (0 when it has no number there) of the
        newest events of ``kind`` by ``actor`` at or after ``since``, newest first, at most
        ``limit`` of them (None: all) — a quota's count (evidence uploads per identity).

        One range of the index ``events_kind_actor (kind, actor, at)``, read from its
        newest end: at most ``limit`` entries and their rows, whatever the journal's size.

        ``window`` (seconds; an upload's quotas, :class:`UploadCap`): on PostgreSQL the
        events of the ``window`` seconds up to the server's clock now, by the server's time
        of each one's append (one range of ``server_times_kind_actor``), each one's time
        given on the runtime's clock (its now, ``since`` + ``window``, less the event's age
        on the server's); SQLite (one host's file, one clock) reads ``since``."""
        ...

    def run_agent(self, run_id: str) -> str | None:
        """The actor of the run's first ``proposal.received`` or ``run.claimed`` (the run's
        owner), or None: nobody proposed in it or claimed it yet."""
        ...

    def head(self) -> tuple[int, str]: ...

    # --- the digest key (outside the chain: never in an event, a view or an export) --
    def digest_key(self) -> bytes:
        """The journal's key for the digests of secret arguments (an HMAC-SHA256 key,
        :func:`~cradle_kg.loop.gate1.keys.input_hash_of`): one per journal, the same for
        every process and host writing it. Created at the first call on a journal that has
        none — :data:`DIGEST_KEY_BYTES` random bytes, inserted only if no other writer's
        is there yet, then read back, so two processes racing end with one key — and
        read once per object. Kept in ``journal_keys``, beside the chain: no event, hash,
        projection or view holds it (``tests/security/test_135``)."""
        ...

    def stored_digest_key(self) -> bytes | None:
        """The digest key if the journal has one, never creating it (``journal copy``'s
        source, strict replay's record)."""
        ...

    def first_hash(self) -> str | None:
        """The hash of the journal's first event (None: empty) — what names the journal a
        graph store projects (``tests/security/test_80``), read without decoding a row."""
        ...

    def watermark(self) -> int:
        """A number that changes whenever *another* connection has appended since the
        last call (this object's own appends do not move it)."""
        ...

    def wait_for_change(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds until another connection appends (PostgreSQL:
        ``LISTEN``/``NOTIFY``; SQLite: ``data_version`` polled every 20 ms). True when an
        append was seen since the previous call (possibly before this one), False on
        timeout; a wake-up may be spurious, so the caller re-reads the head. The first
        call starts watching: appends before it are not reported."""
        ...

    # --- derived state (kept in the append's transaction) --------------------------
    def usage_since(self, *, field: str | None, value: str | None,
                    since: datetime) -> tuple[int, float]: ...

    def usage_within(self, *, field: str | None, value: str | None, window: float,
                     now: datetime) -> tuple[int, float]:
        """Intents and their declared cost in the last ``window`` seconds, as a limit's
        :class:`UsageCap` with ``window`` reads them: on SQLite (one host's file, one
        clock) :meth:`usage_since` ``now - window``; on PostgreSQL the seconds up to the
        server's clock now, each intent counted in the server's second of its append."""
        ...

    def server_time(self) -> datetime | None:
        """The journal server's clock now (PostgreSQL: one ``clock_timestamp()`` read), or
        None for a journal that is one host's file (SQLite: its processes read one clock,
        the runtime's). What a time-dependent decision shared by many hosts reads besides
        the runtime's clock — an approval's expiry (``tests/security/test_595``)."""
        ...

    def usage_total(self, scope: str, subject: str) -> tuple[int, float]:
        """Everything ever counted in one usage bucket — for a budget (``budget.<level>``,
        its subject) the calls charged and their cost: the bucket's running totals (two
        index probes, as a :class:`UsageCap` with ``since`` = :data:`BEGINNING` reads
        them), never a fold of the events."""
        ...

    def usage_top(self, scope: str) -> tuple[str, int, float] | None:
        """The subject of a usage scope with the largest total cost and its totals (None:
        nothing counted): one row per subject of the scope is read (``budgets status``)."""
        ...

    def dangling_intents(self) -> list[tuple[int, str]]: ...

    def run_ids(self) -> list[str]: ...

    def has_run(self, run_id: str) -> bool: ...

    def proposal_runs(self, *, limit: int | None = None, offset: int = 0,
                      newest_first: bool = False) -> tuple[list[str], int]: ...

    def listed_runs(self, *, keys: list[StateKey] | None = None, limit: int | None = None,
                    offset: int = 0, newest_first: bool = False) -> tuple[list[str], int]:
        """One page of the runs with a proposal or a workflow (in the order of their first
        event), only those whose ``run_state`` key is one of ``keys`` when given, and how
        many there are in all (see :mod:`.run_state_sql`)."""
        ...

    def run_state_groups(self) -> list[tuple[StateKey, int]]:
        """How many listed runs have each ``run_state`` key."""
        ...

    def subject_events(self, subject: str, kind: str | None, *, limit: int,
                       newest: bool = True, run_id: str | None = None) -> list[AuditEvent]:
        """At most ``limit`` events of ``kind`` (None: of every kind) about ``subject``,
        from its newest end (newest first) or, ``newest=False``, its oldest (oldest first):
        one range of ``events_subject (subject, seq)``, at most ``limit`` rows decoded
        (``test_72``; a view of an approval deciding whether it is news, ``test_92``);
        ``run_id``: only that run's (the others are skipped in the index walk, not
        decoded: ``test_86``)."""
        ...

    def run_page(self, run_id: str, *, limit: int, after_seq: int = 0, newest: bool = False,
                 kinds: Sequence[str] = (), marked: bool = False) -> list[AuditEvent]:
        """At most ``limit`` events of one run after ``after_seq``, oldest first or,
        ``newest``, newest first; ``kinds``: only those kinds; ``marked``: only those whose
        payload names secret arguments (``secret_arguments``: the others passed over by
        the database, never decoded). One range of ``events_run (run_id, seq)``: at most
        ``limit`` rows decoded, whatever the run's length (the runs page and the run view,
        ``tests/security/test_89``)."""
        ...

    def run_counts(self, run_id: str) -> tuple[int, int, int]:
        """How many events the run has, distinct proposal ids it received and outcomes:
        counted by the database over the run's range of ``events_run``, nothing decoded."""
        ...

    def max_step(self, run_id: str) -> int:
        """The highest ``step`` of a proposal the run received, 0 when none: where a
        session that proposes into an existing run goes on numbering its steps (a derived
        key holds the step: ``tests/security/test_462``)."""
        ...

    def run_state_row(self, run_id: str) -> tuple[str, str, int, int, int, str] | None:
        """The run's ``run_state`` row (:mod:`.run_state_sql`): last proposal, last status
        (``''``: none), open tasks, waiting steps, workflow, finished (``''``: not) — one
        probe, nothing decoded; None: the run has no row (nothing decided yet)."""
        ...

    def run_repairs(self, run_id: str) -> int:
        """How many ``run.outcome`` events of the run say ``repair`` (its repair budget's
        count): one probe of the derived ``repairs`` (:mod:`.tasks_sql`), nothing decoded —
        not a read of the run's events at each repair (``tests/security/test_84``)."""
        ...

    def human_tasks(self, *, run_id: str | None = None, include_resolved: bool = False,
                    limit: int | None = None, offset: int = 0,
                    decider: Decider | None = None
                    ) -> tuple[list[tuple[AuditEvent, AuditEvent | None]], int]:
        """One page of the human tasks opened (of one run), oldest first: each one's
        ``human_task.opened`` event and its resolution's (None while open; only open ones
        unless ``include_resolved``), and how many there are in all. One range of the
        derived ``human_tasks`` (:mod:`.tasks_sql`): the rows decoded are those listed,
        whatever else the journal holds (``tests/security/test_84``)."""
        ...

    def approval_subjects(self, *, run_id: str | None = None) -> list[str]:
        """The subject of every approval requested, in the order of their first request;
        ``run_id``: those that run asked for (its events' seqs joined to ``approval_ids``,
        nothing decoded: ``tests/security/test_88``)."""
        ...

    def approval_requests(self, *, undecided: bool = False, run_id: str | None = None,
                          requested_by: str | None = None, limit: int | None = None,
                          offset: int = 0, decider: Decider | None = None
                          ) -> tuple[list[AuditEvent], int]:
        """One page of the approvals' first requests (``approval.requested`` events), in
        the order they were asked for, and how many there are: every approval, or
        (``undecided``) those no person decided yet; ``run_id``, ``requested_by``: only
        that run's, that agent's — filtered in the query before the page, one row decoded
        per approval listed (``tests/security/test_100``)."""
        ...

    def waiting_under_key(self, asked: KeyAsked, *, approved: bool = False,
                          offset: int = 0) -> AuditEvent | None:
        """The first request of an approval no person decided yet that ``asked.agent``'s
        proposal under its key for the tool asked for another action than
        ``asked.digests``, if any: one query of the derived ``undecided_approvals``,
        filtered in it, one row decoded at most (``tests/security/test_254``).
        ``approved``: of such an approval a person approved and whose action has not run
        yet instead, in the derived ``unrun_approvals`` (``test_284``). ``offset``: the
        one after that many such (in the order they were asked for)."""
        ...

    def written_untrusted(self, firsts: Sequence[str], before: int) -> list[list[str]]:
        """The values (each a list of tokens) executed actions carried on untrusted content
        only, recorded before event ``before``, whose first token is one of ``firsts``: the
        derived ``lineage_written`` (format 14, PostgreSQL migration 18), one indexed
        query per :data:`WRITTEN_CHUNK` tokens — what a trusted read of any run is not the
        origin of (``tests/security/test_496``)."""
        ...

    def latest_budget_sets(self) -> list[AuditEvent]:
        """The newest ``budget.set`` event of each subject (``budget:<key>``), in the order
        the subjects were first set: the derived ``budget_sets`` (:mod:`.tasks_sql`), one
        row decoded per budget — not every ``budget.set`` ever written, at every model
        call a workflow makes."""
        ...

    def inbox_order(self, kinds: Sequence[str], *, run_id: str | None = None,
                    limit: int | None = None, offset: int = 0,
                    decider: Decider | None = None) -> list[tuple[str, int]]:
        """One page of the inbox of several ``kinds`` (``approval``, ``task``, ``step``;
        undecided, open, waiting), merged in the order they were asked for: each item's
        kind and its rank among its kind's (0: the oldest) — read from the derived tables,
        no event decoded (:func:`.tasks_sql.inbox_order`)."""
        ...

    def open_step_requests(self, *, run_id: str | None = None, limit: int | None = None,
                           offset: int = 0, agent: str | None = None,
                           decider: Decider | None = None) -> tuple[list[AuditEvent], int]:
        """One page of the ``human.requested`` events of the human steps still waiting (of
        one run; ``agent``: of the runs whose workflow's agent it is), oldest first — no
        answer (``human.decided`` of the same step and input) and no end of their workflow
        run — and how many wait. Read through the derived ``open_steps``
        (:mod:`.tasks_sql`): the rows decoded are the page's, not every step event of the
        journal."""
        ...

    def waiting(self, agent: str, *, run: str | None = None) -> int:
        """How many things wait for a person on ``agent``'s behalf, as the journal counts
        them under its writer's lock for a :class:`WaitingCap` (:func:`.tasks_sql.waiting_sql`:
        its undecided approvals, the open human steps and the runs on their way to one
        of its workflow's runs, its open escalation tasks; ``run``: as a
        :class:`WaitingCap`'s) — the same count read earlier, outside the lock."""
        ...

    def approval_place(self, approval_id: str) -> tuple[str, str] | None:
        """The subject (``approval:<digest>``) and the run of an approval's events, if it
        was requested: one probe of ``approval_ids``, one of the events by seq. Its events
        are then read from that run alone: an agent asking for one action in many runs
        does not make each view or decision of one of them read all (``test_71``)."""
        ...

    def approval_request(self, approval_id: str) -> AuditEvent | None:
        """The ``approval.requested`` event that asked for ``approval_id`` (its first), if
        any: one probe of ``approval_ids``, one row decoded."""
        ...

    def subject_last(self, subject: str) -> int:
        """The seq of the newest event about ``subject`` (0: none), nothing decoded: the
        ``if_last`` a decision reads *before* it reads the events it decides on."""
        ...

    def approval_moved(self, guard: ApprovalGuard) -> bool:
        """What the append of an event carrying ``guard`` probes under the writer's lock,
        read now, outside it: a revoke reads its run's intents from the approving decision
        on here, and under the lock only those written since (``tests/security/test_305``)."""
        ...

    def approval_uses(self, approval_id: str, run_id: str, *, after: int, before: int
                      ) -> int:
        """How many intents of ``run_id`` name ``approval_id`` between the seqs ``after``
        and ``before`` (:func:`.tasks_sql.approval_uses`): a revoked reusable approval's
        uses, for its views."""
        ...

    # --- verifying -----------------------------------------------------------------
    def verify(self, *, anchor: Anchor | None = None, progress: Progress | None = None,
               semantics: bool = False) -> ChainReport:
        """The chain, the head and the derived tables; with ``semantics``, also what the
        events mean (:mod:`.invariants`)."""
        ...

    # --- workers -------------------------------------------------------------------
    def acquire_lease(self) -> Lease:
        """A new worker lease (its id goes into every intent this worker writes)."""
        ...

    def worker_alive(self, worker_id: str) -> bool:
        """True while the worker that took ``worker_id`` still holds its lease."""
        ...

    def exclusive(self, name: str) -> AbstractContextManager[None]:
        """Held by one worker at a time across every process on this journal (recovery)."""
        ...


__all__ = [
    "BEGINNING",
    "BUDGET_SCOPES",
    "DIGEST_KEY_BYTES",
    "DIGEST_KEY_NAME",
    "IdempotencyKeyTaken",
    "Journal",
    "Lease",
    "LimitReached",
    "NewEvent",
    "NoLease",
    "RunNotNew",
    "SubjectMoved",
    "UploadCap",
    "UploadsReached",
    "UsageCap",
    "WaitingCap",
    "WaitingReached",
    "append_caps",
    "append_uploads",
    "append_waiting",
    "begun_run",
    "breached_cap",
    "moved_subject",
    "new_runs",
    "read_only_error",
]
