"""The loop's context: the one way anything writes to the journal.

Every stage of the loop — and whatever else records something: plans, the workflow
engine, autonomy and budget changes — appends through :meth:`LoopContext.append`, so
every written event reaches the same listeners (the integrity checker's cache, a replay's
comparison, a test's probe) in the order it was written. Besides the writer, the context
carries what the stages read at the moment they act: the clock (every reading the loop
takes is journaled), the worker lease (written into every intent), the configuration in
force (identities, permissions, approvers, limits).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime

from ..config import RuntimeConfig
from ..errors import CradleError
from ..records import AuditEvent
from ..storage import IdempotencyKeyTaken, Journal, Lease, NewEvent, SubjectMoved

_log = logging.getLogger(__name__)
Clock = Callable[[], datetime]
#: called with the events just written, in the order they were written
AppendListener = Callable[[Sequence[AuditEvent]], None]
#: the journal keys the first submission of a proposal id claims (gate 1's submission check)
PROPOSAL_CLAIM_PREFIX = "proposal:"
#: the journal key an agent entry point's claim of a new run holds (``Runtime.claim_run``)
RUN_CLAIM_PREFIX = "run-claim:"
#: the journal key an agent entry point's claim of a task under a ``task`` limit holds
#: (:mod:`.task_claims`)
TASK_CLAIM_PREFIX = "task-claim:"
#: the journal key an approval's revoke claims: one revoke per approval, whatever else is
#: written about its action meanwhile (``tests/security/test_330``)
REVOKE_CLAIM_PREFIX = "approval-revoke:"
#: the journal key a person's decision of an approval claims (approve, reject, request
#: changes, a cancel's rejection): one decision per approval, whatever else is written
#: about its action meanwhile (``tests/security/test_333``)
DECISION_CLAIM_PREFIX = "approval-decision:"
#: events about an action that another submission writes while its worker holds it (a
#: resubmitted key answered from the record): they do not take the action over
_NOT_A_TAKEOVER = frozenset({"action.replayed"})
#: a proposal's events up to its action's intent: what :meth:`LoopContext.while_run_open`
#: writes ``if_run_open`` (what follows the intent says what the tool did: always written)
_BEFORE_ACTION = frozenset({"proposal.received", "decision.made", "lineage.traced",
                            "approval.requested", "approval.consumed", "action.intent"})


class ProposalIdClaimed(Exception):
    """Another submission claimed this proposal id in its run first: evaluate it again."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class TaskClaimed(ProposalIdClaimed):
    """Another agent's proposal claimed this proposal's task first (its ``task-claim:``
    key): evaluate it again (:mod:`.task_claims`), nothing of it written."""


class LoopContext:
    """The journal's one writer, with the clock, the lease and the configuration in force."""

    #: whether :meth:`one_transaction` may hold appends back (a replay, which compares
    #: every append with the recorded journal as it happens, says no: it writes as it goes)
    holds_appends = True

    def __init__(self, journal: Journal, *, config: RuntimeConfig, clock: Clock,
                 lease: Lease) -> None:
        self.journal = journal
        self.config = config
        self.clock = clock
        self.lease = lease
        self._lease_lock = threading.Lock()
        self.listeners: list[AppendListener] = []
        #: per thread: the events a :meth:`one_transaction` block appended so far
        self._held = threading.local()
        #: per thread: the workflow run a :meth:`while_run_open` block guards
        self._open_run = threading.local()

    @property
    def held(self) -> Sequence[NewEvent]:
        """What this thread's :meth:`one_transaction` block appended so far, not yet
        written (a commit hook checks them with the events about to commit)."""
        events: list[NewEvent] | None = getattr(self._held, "events", None)
        return events or ()

    @contextmanager
    def one_transaction(self, *, flush: bool = True) -> Iterator[None]:
        """Every append of this thread inside the block is written when it ends, in one
        transaction (one durable commit); nothing is written when the block raises.

        For a call with no effect on the world (a read-only tool, see
        :meth:`.execution.Execution.execute`): what it journals only needs to be durable
        before its answer leaves the runtime. A nested block joins the outer one.
        ``flush=False`` commits it unflushed (see :meth:`append`) — unless the block
        consumed an approve-once, whose consumption is always flushed.
        """
        if not self.holds_appends or getattr(self._held, "events", None) is not None:
            yield
            return
        self._held.events = []
        try:
            yield
            events: list[NewEvent] = self._held.events
        finally:
            self._held.events = None
        self.append(events, flush=flush or any(e.kind == "approval.consumed" for e in events))

    @contextmanager
    def while_run_open(self, run_id: str) -> Iterator[None]:
        """Inside the block, this thread's events of the run ``run_id`` up to an action's
        intent (the proposal, its decision, an approval asked or used, the intent) are
        written ``if_run_open``: refused under the journal's writer's lock, nothing of the
        append written (:class:`~cradle_kg.storage.RunEnded`), once the workflow run has
        ended — a workflow's tool step proposes nothing for a run cancelled meanwhile
        (``tests/security/test_288``). What follows an intent is written whatever the run
        became: the tool ran."""
        before = getattr(self._open_run, "run", None)
        self._open_run.run = run_id
        try:
            yield
        finally:
            self._open_run.run = before

    def guards(self, run_id: str) -> bool:
        """Whether this thread is in a :meth:`while_run_open` block of ``run_id``."""
        return getattr(self._open_run, "run", None) == run_id

    def append(self, events: Sequence[NewEvent], *, flush: bool = True) -> list[AuditEvent]:
        """Write ``events`` in one transaction, then tell every listener (``flush=False``:
        see :meth:`~cradle_kg.storage.Journal.append`).

        Inside a :meth:`one_transaction` block the events are held back (and ``[]`` is
        returned) until the block ends. Raises :class:`ProposalIdClaimed` when a proposal
        id's claim was taken first (:class:`TaskClaimed`: its task's), and
        :class:`~cradle_kg.storage.IdempotencyKeyTaken` for any other key already held.
        """
        guarded = getattr(self._open_run, "run", None)
        if guarded is not None:
            events = [replace(e, if_run_open=True)
                      if e.run_id == guarded and e.kind in _BEFORE_ACTION else e
                      for e in events]
        held: list[NewEvent] | None = getattr(self._held, "events", None)
        if held is not None:
            held.extend(events)
            return []
        try:
            written = self.journal.append(events, flush=flush)
        except IdempotencyKeyTaken as taken:
            if taken.key.startswith(TASK_CLAIM_PREFIX):
                raise TaskClaimed(taken.key) from taken
            if taken.key.startswith(PROPOSAL_CLAIM_PREFIX):
                raise ProposalIdClaimed(taken.key) from taken
            raise
        for listener in self.listeners:
            listener(written)
        return written

    def append_fenced(self, events: Sequence[NewEvent], *, subject: str, last: int | None,
                      flush: bool = True) -> list[AuditEvent]:
        """Append ``events``, those about ``subject`` (an action) carrying ``if_last=last``:
        the seq of the latest event about the action this writer knows — its own intent,
        retry or observation, or what a recovery pass read. The seq is the fencing token:
        when another worker wrote about the action since (recovery took over the intent of
        a worker it found dead, or that worker, stalled, came back and went on), nothing
        is written and :class:`~cradle_kg.storage.SubjectMoved` is raised. An
        ``action.replayed`` in between (a resubmission answered from the record) is not a
        takeover: the append is tried again after it. ``last=None`` (the events of a
        :meth:`one_transaction` block, written at once): appended as they are."""
        while True:
            guarded = events if last is None else [
                replace(e, if_last=last) if e.subject == subject else e for e in events]
            try:
                return self.append(guarded, flush=flush)
            except SubjectMoved:
                assert last is not None
                newer = [e for e in self.journal.events_for_subject(subject) if e.seq > last]
                if not newer or any(e.kind not in _NOT_A_TAKEOVER for e in newer):
                    raise
                last = newer[-1].seq

    def renew_lease(self, lost: Lease) -> None:
        """Take a new lease after ``lost`` was lost: the intents written from now on are
        this worker's again (those under the lost one are recovery's to reconcile). Once
        per lost lease, whichever thread finds it lost first; the others keep the new one."""
        with self._lease_lock:
            if self.lease is not lost:
                return  # another thread renewed it already
            self.lease = self.journal.acquire_lease()
            _log.warning("this worker's lease `%s` on the journal `%s` was lost (its session "
                         "ended); it took the lease `%s`: the intents written under the lost "
                         "one are recovery's to reconcile", lost.id, self.journal.location,
                         self.lease.id)
        lost.release()

    def held_lease(self) -> Lease:
        """The worker's lease, renewed first (:meth:`renew_lease`, logged) when it was
        lost: what a new intent names. INVARIANT: no intent is written under a lease
        known lost — another worker's recovery may take it over at once, and the call it
        prepares would be refused (``Superseded``) after the intent was written."""
        lease = self.lease
        if not lease.held():
            self.renew_lease(lease)
        return self.lease

    def append_unmoved(self, build: Callable[[], Sequence[NewEvent]], *, attempts: int,
                       gave_up: CradleError) -> list[AuditEvent]:
        """Append what ``build`` decides from a fresh read of a subject, its events carrying
        ``if_last`` (:func:`last_seq` of that read) or claiming a key of the decision's own
        (an approval's: :data:`DECISION_CLAIM_PREFIX`): a decision written once. When the
        subject moved meanwhile, or the key was claimed (another decision landed), read and
        decide again — the second usually finds nothing left to decide and raises;
        ``gave_up`` after ``attempts`` moves."""
        for _ in range(attempts):
            events = build()
            try:
                return self.append(events)
            except (SubjectMoved, IdempotencyKeyTaken):
                continue
        raise gave_up


def last_seq(seen: Sequence[AuditEvent]) -> int:
    """The ``if_last`` of a decision read from ``seen`` (a subject's events; 0: none)."""
    return seen[-1].seq if seen else 0
