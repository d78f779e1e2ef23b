"""The human side of an approval: asking, deciding, viewing, and going on afterwards.

An approval is bound to one decision, the digest of the exact action and its run
(:mod:`.approvals` holds the rules); a run that waits holds no thread, so deciding — here,
in any process — is what lets it go on: the waiting proposal is submitted again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from ..errors import (
    ApprovalError,
    ApprovalUsedError,
    InputError,
    JournalError,
    QuotaExceededError,
    UnknownNameError,
)
from ..inputs import InputLimits, check_human_input
from ..records import (
    RUNTIME_ACTOR,
    ApprovalStatus,
    AuditEvent,
    HumanApproval,
    Outcome,
    OutcomeStatus,
    Proposal,
    RuntimeDecision,
)
from ..storage import (
    ApprovalGuard,
    ApprovalMoved,
    IdempotencyKeyTaken,
    Journal,
    NewEvent,
    SubjectMoved,
    WaitingCap,
    WaitingReached,
)
from ..tools import secret_marks
from .approvals import (
    ApprovalBook,
    ApprovalState,
    excluded_for,
    run_starter,
    superseded_event,
    view_is_news,
)
from .context import DECISION_CLAIM_PREFIX, LoopContext
from .gate1.checks import GateResult
from .gate1.decision import short_id
from .outcomes import outcome_event

#: runs a proposal through the whole loop (the runtime's ``submit``)
Submit = Callable[[Proposal], Outcome]
#: whether this process holds a tool's implementation (the runtime's ``tools.has``)
HoldsTool = Callable[[str], bool]
#: reads of an approval a decision takes at most: a decision that lands first claims the
#: approval's decision key (UNIQUE), and the read after it finds the approval decided
_DECIDE_ATTEMPTS = 2
#: what a person may decide: ``pending`` and ``expired`` are states, not decisions
DECISIONS = (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED,
             ApprovalStatus.CHANGES_REQUESTED)


def decision_of(status: object, reason: object) -> ApprovalStatus:
    """``status`` as a decision a person may make, and ``reason`` as text, or InputError.

    Before, any status was recorded: a LangGraph resume (application data) deciding
    ``pending`` wrote an ``approval.decided`` that left the approval pending — to be
    decided again — and ended its proposal as "changes requested"; ``expired`` too; a
    reason of any JSON shape was journaled (``tests/security/test_62``)."""
    try:
        decision = ApprovalStatus(status) if isinstance(status, str) else None
    except ValueError:
        decision = None
    if decision not in DECISIONS:
        raise InputError(f"`status`: `{str(status)[:64]}` is not a decision (one of "
                         + ", ".join(f"`{d}`" for d in DECISIONS) + ")")
    if reason is not None and not isinstance(reason, str):
        raise InputError(f"`reason`: expected a text, not {type(reason).__name__}")
    assert decision is not None
    return decision


def _out_of_utc_range(moment: datetime) -> str | None:
    """Why ``moment`` has no date in UTC (None: it has one) — before the first time a date
    holds, or after the last: its offset carries it past either end of the calendar."""
    try:
        moment.astimezone(UTC)
    except OverflowError:
        if moment.year == 1:  # `0001-01-01T00:00:00+05:00`: 19:00 the day before year 1
            return "is earlier than `0001-01-01T00:00:00Z`, the first time a date holds"
        return "is later than `9999-12-31T23:59:59Z`, the last time a date holds"
    return None


def check_waiting(limits: InputLimits, journal: Journal, agent: str, *,
                  run: str | None = None) -> WaitingCap | None:
    """INVARIANT: an agent has at most ``waiting_per_agent`` things waiting for a person —
    the approvals its actions asked for, not yet decided, and the human steps of its
    workflow's runs, not yet answered; one more (an approval to ask, a run its token
    starts) is refused before anything is journaled. Before, nothing bounded them (no limit
    counts a call that does not run): an agent asked for an approval with every proposal,
    or started a run of its workflow again and again, and the approvers' inbox held as many
    as it sent (``tests/security/test_191``, ``test_193``) — the one that mattered among
    them. Counted from the journal's derived tables (four counts, only when one more is to
    be asked), and counted again by the journal under its
    writer's lock with the append that asks (the :class:`~cradle_kg.storage.WaitingCap`
    returned, for the event that makes one more wait): two processes asking at once no
    longer pass it by one each (``test_202``). The human tasks its escalations opened
    count there too (``test_209``), and so do its workflow's runs started and not yet at
    their first human step (``test_249``): two processes starting runs at once each
    counted none of them while their steps before the human one ran. Counted here as the
    journal counts under its lock (:meth:`~cradle_kg.storage.Journal.waiting`). ``run``:
    the run the one more waits in — one of the agent's runs on its way to a human step
    counts no more once something waits in it (:class:`~cradle_kg.storage.WaitingCap`)."""
    cap = limits.waiting_per_agent
    if cap is None:
        return None
    waiting = journal.waiting(agent, run=run)
    if waiting >= cap:
        raise waiting_error(agent, waiting, cap)
    return WaitingCap(agent, cap, run)


def waiting_error(agent: str, waiting: int, cap: int) -> QuotaExceededError:
    """The refusal of one more thing to wait for ``agent`` (:func:`check_waiting`)."""
    return QuotaExceededError(
        f"`{agent}` has {waiting} approvals, human steps, tasks and runs on their way to "
        f"a human step waiting for a person: the limit is {cap}" if cap
        else "nothing may wait for a person in this home "
        "(`input_limits.waiting_per_agent` is 0)",
        hint="a person decides (or rejects) the waiting ones first: `cradle-kg inbox`; "
             "the limit is `input_limits.waiting_per_agent` in the home's config.json",
        quota="waiting_per_agent", identity=agent, limit=cap)


#: how many of the newest requests of an action in a run a proposal under a key reads to
#: find the approval its key's earlier proposal waits for (``tests/security/test_242``)
KEY_LOOKBACK = 8


def decided_events(book: ApprovalBook, state: ApprovalState, seen: Sequence[AuditEvent],
                   decided: NewEvent, *, status: ApprovalStatus, approver_id: str,
                   reason: str | None, now: datetime) -> list[NewEvent]:
    """An approval's ``decided`` event (:meth:`.approvals.ApprovalBook.decision_event`,
    claiming the approval's decision key) and, for a rejection or a request for changes,
    the outcome that ends the proposal's wait (``denied`` or ``repair``, with the reason):
    what a person's decision writes, and a cancel of the approval's workflow run
    (``workflow cancel``)."""
    events = [decided]
    if status is not ApprovalStatus.APPROVED:
        proposal = book.requested_proposal(state.approval, seen)
        ended = state.approval.model_copy(update={
            "status": status, "approver_id": approver_id, "decided_at": now,
            "reason": reason})
        word = "rejected" if status is ApprovalStatus.REJECTED else "changes requested"
        events.append(outcome_event(Outcome(
            run_id=ended.run_id, proposal_id=proposal.id,
            status=(OutcomeStatus.DENIED if status is ApprovalStatus.REJECTED
                    else OutcomeStatus.REPAIR), approval=ended,
            reasons=(f"{word} by `{approver_id}`" + (f": {reason}" if reason else ""),)),
            proposal.id, at=now))
    return events


#: how many times a keyed request is written again at once over events of other runs
#: about its action that landed since it read (``test_384``), before it is decided again
FOREIGN_MOVES = 16


class KeyedRequestRaced(Exception):
    """Internal signal: another proposal asked about the same action while this one, under
    its agent's key, was deciding to ask; nothing of it was written (it is decided again,
    and then reads that request: ``tests/security/test_369``)."""


def ended(journal: Journal, run_id: str, proposal_id: str) -> bool:
    """Whether the proposal's latest outcome in its run is final (nothing waits)."""
    event = journal.latest_outcome(run_id, proposal_id)
    return event is not None and str(event.payload["outcome"]["status"]) not in (
        OutcomeStatus.AWAITING_APPROVAL, OutcomeStatus.IN_PROGRESS)


class ApprovalFlow:
    def __init__(self, ctx: LoopContext, book: ApprovalBook, *, submit: Submit,
                 holds_tool: HoldsTool | None = None) -> None:
        self.ctx = ctx
        self.book = book
        self.submit = submit
        self.holds_tool = holds_tool

    def request(self, proposal: Proposal, gate: GateResult, decision: RuntimeDecision,
                base: Sequence[NewEvent], now: datetime) -> Outcome:
        """Wait for a human approval of this exact action (asked for once per proposal)."""
        # INVARIANT: nor does who asked for the workflow run the proposal belongs to
        # (tests/security/test_178): written into the request, as the others are
        starter = run_starter(self.ctx.journal, proposal.effective_run_id)
        excluded = sorted(excluded_for(self.ctx.config, proposal)
                          | ({starter} if starter is not None else set()))
        # INVARIANT: a pending approval belongs to its run and its proposal; another run
        # (or proposal) asking for the same action gets one of its own, in the inbox —
        # but a proposal under the same agent's key asking again reads it (test_236)
        subject = "approval:" + gate.action_digest
        # INVARIANT: a keyed request is written only if no event about the action came
        # since its key was looked for (the journal checks it under its writer's lock):
        # calls of one key at once each found none pending and asked the approvers, up to
        # five requests for one effect (tests/security/test_369)
        last: int | None = self._last_seq(subject)
        pending = self._pending(proposal, gate.action_digest)
        # INVARIANT: a pending approval is waited on only while the policies ask within the
        # scope it was asked within. Sent to another desk since (or to `*`), the proposal
        # waited on it: the desk the policies name now was never asked, and the old desk's
        # approval covered nothing (test_412). It asks anew within the scope now, and
        # closes the old one in the same append (tests/security/test_516) — only when the
        # policies moved it: with the policy set it was asked under, another scope comes
        # from what the agent wrote (its declared risk, task, evidence: none in the
        # action's digest), and the agent calling again under its key closed a person's
        # pending approval each time, asking another (tests/security/test_536)
        moved = pending[0] if pending and pending[0].asked_scope != gate.approval_scope \
            and self._asked_under(pending[0]) != decision.policy_version else None
        if moved is not None:
            pending = []
        elif not proposal.action.idempotency_key:
            last = None
        # the new request takes the closed one's place in the agent's waiting count (the
        # same append removes it): nothing more waits
        waiting = None if pending or moved is not None else self.check_waiting(proposal)
        approval = pending[0].approval if pending else HumanApproval(
            id=self._new_id(decision.id, gate.action_digest),
            decision_id=decision.id, proposal_id=proposal.id,
            run_id=proposal.effective_run_id, action_digest=gate.action_digest,
            requested_by=proposal.agent_id, requested_at=now, scope=gate.approval_scope,
        )
        events = list(base)
        reasons = decision.reasons or ("a human approval of this exact action is required",)
        if moved is not None:
            closing = superseded_event(moved, approval, now)
            events.append(closing)
            reasons = (*reasons, str(closing.payload["reason"]))
        if not pending:
            # INVARIANT: no person is asked about a workflow run that has ended (a cancel):
            # the request is written ``if_run_open``, as an approval's use is — refused
            # under the writer's lock, nothing of the append written, the proposal decided
            # again and denied (Runtime._submit_parsed; tests/security/test_303)
            events.append(NewEvent(
                run_id=approval.run_id, kind="approval.requested",
                subject=subject, actor=RUNTIME_ACTOR, at=now,
                payload={"approval": approval.model_dump(mode="json"), "excluded": excluded,
                         "proposal": proposal.model_dump(mode="json"),
                         **secret_marks(gate.spec)}, waiting=waiting, if_run_open=True,
                if_last=last))
        outcome = Outcome(run_id=proposal.effective_run_id, proposal_id=proposal.id,
                          status=OutcomeStatus.AWAITING_APPROVAL, decision=decision,
                          approval=approval, reasons=reasons)
        events.append(outcome_event(outcome, proposal.id))
        for _ in range(FOREIGN_MOVES + 1):
            try:
                self.ctx.append(events)
            except WaitingReached as reached:  # another writer asked first: nothing written
                raise waiting_error(reached.cap.agent, reached.waiting,
                                    reached.cap.limit) from None
            except IdempotencyKeyTaken as taken:
                if moved is None or taken.key != DECISION_CLAIM_PREFIX + moved.approval.id:
                    raise
                # a person decided the old approval first: nothing written, decided again
                raise KeyedRequestRaced(proposal.id) from None
            except SubjectMoved:  # an event about the action came first: nothing written
                last = None if last is None else self._moved_elsewhere(
                    subject, last, proposal.effective_run_id)
                if last is None:
                    raise KeyedRequestRaced(proposal.id) from None
                events = [replace(e, if_last=last) if e.if_last is not None
                          and e.subject == subject else e for e in events]
                continue
            return outcome
        raise KeyedRequestRaced(proposal.id)

    def _moved_elsewhere(self, subject: str, last: int, run_id: str) -> int | None:
        """The newest seq about ``subject`` now, when every event about it since ``last``
        is of another run; None when one is of ``run_id``.

        INVARIANT: a keyed request is decided again only for an event of its own run: what
        it read (``_pending_for_key``, the run's requests) only such an event changes.
        Before, every run's request for the action — another agent's, in runs of its own —
        made it be decided again, three times at most, then refused ("submit it again"):
        an agent asking in each read held another's request off (``tests/security/
        test_384``), as ``test_333``'s decisions were before their keys."""
        here = self.ctx.journal.subject_events(subject, None, limit=1, newest=True,
                                               run_id=run_id)
        if here and here[0].seq > last:
            return None
        return self._last_seq(subject)

    def _last_seq(self, subject: str) -> int:
        """The seq of the newest event about ``subject`` (0: none): one row of its index."""
        newest = self.ctx.journal.subject_events(subject, None, limit=1, newest=True)
        return newest[0].seq if newest else 0

    def _new_id(self, decision_id: str, digest: str) -> str:
        """The id of a new approval: derived from the decision that asks and the digest,
        and never one asked for already. A proposal asking again after its approval was
        revoked, in the same instant as its first request (one clock reading: a fixed or
        coarse clock), made the same decision id, so the same approval id: the new request
        was hidden behind the revoked one (``approval_ids`` keeps an id's first request),
        out of every inbox, and the agent waited for good (``tests/security/test_308``).
        One probe of ``approval_ids``, paid by a call that asks a person."""
        approval_id, n = "apr:" + short_id(decision_id, digest), 0
        while self.ctx.journal.approval_request(approval_id) is not None:
            n += 1
            approval_id = "apr:" + short_id(decision_id, digest, n)
        return approval_id

    def check_waiting(self, proposal: Proposal) -> WaitingCap | None:
        """The agent's waiting quota's cap, or its refusal when it is full (counted
        outside the writer's lock: :func:`check_waiting`)."""
        return check_waiting(self.ctx.config.input_limits, self.ctx.journal,
                             proposal.agent_id, run=proposal.effective_run_id)

    def _asked_under(self, st: ApprovalState) -> str | None:
        """The version of the policy set the proposal that asked for ``st`` was last
        decided under (its latest outcome's decision), or None when unknown."""
        a = st.approval
        event = self.ctx.journal.latest_outcome(a.run_id, a.proposal_id)
        outcome = event.payload.get("outcome") if event is not None else None
        decided = outcome.get("decision") if isinstance(outcome, dict) else None
        version = decided.get("policy_version") if isinstance(decided, dict) else None
        return version if isinstance(version, str) else None

    def _pending(self, proposal: Proposal, digest: str) -> list[ApprovalState]:
        """The approval this proposal waits for already (:meth:`_pending_for_proposal`),
        or, for a proposal under the agent's own idempotency key, the one the key's first
        proposal of this action in this run waits for (:meth:`_pending_for_key`)."""
        found = self._pending_for_proposal(proposal, digest)
        if found or not proposal.action.idempotency_key:
            return found
        return self._pending_for_key(proposal, digest)

    def _pending_for_key(self, proposal: Proposal, digest: str) -> list[ApprovalState]:
        """The pending approval the newest request of this action in this run asked for,
        when that request's proposal is this agent's under this key, for the same person
        (``on_behalf_of``), and no person decided it yet.

        INVARIANT: a client that calls again with the same key while the approval waits —
        what MCP's answer tells it to do — reads that approval; before, each call asked
        the approvers again, one more inbox item per poll (``tests/security/test_236``).
        Only the newest :data:`KEY_LOOKBACK` requests of this digest in the run are read
        (one range of the subject index): before, every one of them was decoded at each
        keyed submission — an agent asking for the action again and again under new keys
        made the N-th submission read N rows (``tests/security/test_242``, as ``test_87``
        for the proposal path). A key whose request is older than those asks anew. The
        key's one effect is kept by the key itself: whichever proposal runs first holds
        its intent, and every other is answered from it."""
        run_id = proposal.effective_run_id
        requests = self.ctx.journal.subject_events(
            "approval:" + digest, "approval.requested", limit=KEY_LOOKBACK, newest=True,
            run_id=run_id)
        for request in requests:  # newest first
            asked = request.payload.get("proposal")
            action = asked.get("action") if isinstance(asked, dict) else None
            if not isinstance(asked, dict) or not isinstance(action, dict):
                continue
            if (asked.get("agent_id") != proposal.agent_id
                    or action.get("idempotency_key") != proposal.action.idempotency_key
                    or asked.get("on_behalf_of") != proposal.on_behalf_of):
                continue
            approval_id = str(request.payload["approval"]["id"])
            if any(st.approval.id == approval_id
                   for st in self.book.decided_for_digest(digest, run_id=run_id)):
                return []
            state = ApprovalBook.state_in([request], approval_id)
            return [state] if state.approval.status is ApprovalStatus.PENDING else []
        return []

    def _pending_for_proposal(self, proposal: Proposal, digest: str) -> list[ApprovalState]:
        """The approval this proposal waits for already, if any: the one its last outcome
        in the run waits on, when it is of this action and no person decided it yet —
        one outcome and the digest's decisions in the run read, not every approval the
        run asked for the action (``tests/security/test_87``: one action proposed N times
        in one run made each submission fold N approvals, twice)."""
        run_id = proposal.effective_run_id
        event = self.ctx.journal.latest_outcome(run_id, proposal.id)
        if event is None:
            return []
        last = Outcome.model_validate(event.payload["outcome"])
        a = last.approval
        if (last.status is not OutcomeStatus.AWAITING_APPROVAL or a is None
                or a.status is not ApprovalStatus.PENDING or a.action_digest != digest
                or a.run_id != run_id or a.proposal_id != proposal.id):
            return []
        if any(st.approval.id == a.id for st in self.book.decided_for_digest(digest,
                                                                             run_id=run_id)):
            return []
        request = self.ctx.journal.approval_request(a.id)
        if request is None or request.run_id != run_id:
            return []
        return [ApprovalBook.state_in([request], a.id)]

    def decide(self, approval_id: str, *, approver_id: str, token: str,
               status: ApprovalStatus, once: bool = True, scope: str | None = None,
               until: datetime | None = None, reason: str | None = None,
               resume: bool = True) -> tuple[HumanApproval, Outcome | None]:
        """Record a human decision; an approval resumes the waiting proposal by itself.

        A refused attempt (unknown approver, wrong token, self-approval, scope, expiry) is
        journaled as ``approval.refused`` before the :class:`ApprovalError` is raised. A
        rejection or a request for changes ends the wait: the proposal's outcome becomes
        ``denied`` or ``repair``, with the approver's reason.
        """
        status = decision_of(status, reason)
        check_human_input(self.ctx.config.input_limits,
                          ids={"approval_id": approval_id, "approver_id": approver_id,
                               "scope": scope}, texts={"reason": reason, "token": token})
        if scope is not None and not scope.strip():
            # INVARIANT: an empty scope is no scope. It counted as one given (`once`
            # defaults to "single use unless a scope or an expiry is given"), and was then
            # read as none: an empty scope field recorded a reusable approval within the
            # request's scope, no expiry (tests/security/test_501)
            raise InputError("`scope`: empty; leave it out for a single-use approval, or "
                             "name the scope a reusable approval holds within")
        if until is not None and until.utcoffset() is None:  # compared with the journal's
            # clock, which is aware: a naive expiry was a TypeError (an HTTP 500)
            raise InputError(f"`until`: `{until.isoformat()}` has no time zone "
                             "(ISO-8601 with an offset, e.g. `2030-01-01T00:00:00Z`)")
        beyond = None if until is None else _out_of_utc_range(until)
        if until is not None and beyond is not None:
            # `9999-12-31T23:59:59-05:00` ("never", west of Greenwich) is past what a date
            # holds in UTC: journaled, it stopped the graph's projection for good (the
            # approved action's commit check too: it ran, and was recorded as failed).
            # `0001-01-01T00:00:00+05:00` is before it: it was said "later than" too
            # (tests/security/test_342)
            raise InputError(f"`until`: `{until.isoformat()}` {beyond}")
        # the digest's events of the approval's run are read once before the decision and
        # once after it (what the approval is now, and the proposal that asked for it)
        def decision_events() -> list[NewEvent]:
            state, seen = self.book.read(approval_id)
            now = self.ctx.clock()
            try:
                event = self.book.decision_event(state, approver_id=approver_id, token=token,
                                                 status=status, now=now, once=once,
                                                 scope=scope, until=until, reason=reason)
            except ApprovalError as exc:
                self._refused(state, approver_id, status, exc, now)
                raise
            # INVARIANT: decided once — the event claims the approval's decision key; a
            # decision another worker wrote meanwhile makes this one read again (and be
            # refused: the approval is no longer pending). Nothing else holds it off: before,
            # it was written `if_last` over the digest's newest event in any run, read again
            # at most five times, and an agent asking for the same action in other runs
            # kept a person's decision from landing (tests/security/test_333)
            return decided_events(self.book, state, seen, event, status=status,
                                  approver_id=approver_id, reason=reason, now=now)

        self.ctx.append_unmoved(decision_events, attempts=_DECIDE_ATTEMPTS, gave_up=JournalError(
            f"approval `{approval_id}`: its decision could not be written; decide again"))
        state, after = self.book.read(approval_id)
        updated = state.approval
        outcome = None
        if resume and status is ApprovalStatus.APPROVED:
            proposal = self.book.requested_proposal(updated, after)
            # a tool registered only in another process (an MCP proxy's upstream tools) is
            # run there: the approval is recorded, and that process's next call uses it
            if self.holds_tool is None or self.holds_tool(proposal.action.action_type):
                outcome = self.submit(proposal)
        return updated, outcome

    def revoke(self, approval_id: str, *, approver_id: str, token: str,
               reason: str) -> HumanApproval:
        """Take back an approved approval: one ``approval.decided`` of status ``revoked``
        (:meth:`.approvals.ApprovalBook.revoke_event` checks who and what), claiming the
        approval's revoke key (two revokes: one; the second reads it revoked, refused).
        After it the approval authorizes nothing: the proposal that asked for it asks a
        person anew when it comes again (``tests/security/test_304``). Nothing else
        written about its action holds it off: before, it was written ``if_last`` over the
        digest's newest event in any run, read again at most five times, and an agent
        asking for the same action in other runs kept a person from revoking
        (``test_330``).

        Before its use it is guarded against it (:class:`~cradle_kg.storage.
        ApprovalGuard`): an intent naming it that landed first refuses it under the
        writer's lock. An approve-once is then :class:`~cradle_kg.errors.
        ApprovalUsedError` (its one action ran), nothing written; a reusable approval is
        read again and revoked as used. A reusable approval used already is revoked
        unguarded, saying so: the actions that ran under it stay authorized, and an intent
        after the revoke is refused by its own guard — of a use and the revoke racing,
        either the use lands first and runs, or nothing more runs (``test_316``,
        ``test_317``). A refused attempt (unknown approver, wrong token, excluded, not
        approved) is journaled as ``approval.refused``, as a refused decision is."""
        check_human_input(self.ctx.config.input_limits,
                          ids={"approval_id": approval_id, "approver_id": approver_id},
                          texts={"reason": reason, "token": token})
        if not isinstance(reason, str) or not reason.strip():
            raise InputError("`reason`: a revoke needs a reason (why the approval is "
                             "taken back)")
        once: list[bool] = []  # what the last read found: an approve-once or not

        def revoke_events() -> list[NewEvent]:
            # INVARIANT: the head probed before the reads — an intent written after it is
            # found under the writer's lock (the guard's probe reads from it on), one
            # before it by the read here (outside the lock: a long run's intents are read
            # without holding every writer)
            head = self.ctx.journal.head()[0]
            state, seen = self.book.read(approval_id)
            once.append(state.approval.once)
            now = self.ctx.clock()
            # the approving decision it read: an intent under the approval comes after it
            after = max((e.seq for e in seen if e.kind == "approval.decided"
                         and e.payload.get("approval_id") == approval_id), default=0)

            def used() -> bool:
                return self.ctx.journal.approval_moved(ApprovalGuard(
                    state.approval.id, state.approval.run_id, revoking=True, after=after))

            try:
                event = self.book.revoke_event(state, approver_id=approver_id, token=token,
                                               reason=reason, now=now, used=used)
            except ApprovalError as exc:
                self._refused(state, approver_id, ApprovalStatus.REVOKED, exc, now)
                raise
            guard = None if event.payload.get("used") else ApprovalGuard(
                state.approval.id, state.approval.run_id, revoking=True,
                after=max(after, head))
            return [replace(event, approval_guard=guard)]

        # INVARIANT: at most three reads, whatever an agent writes: a use that lands first
        # refuses the guarded one once (the next read finds it used: unguarded), another
        # revoke's key once (the next read finds it revoked: refused)
        for _ in range(3):
            try:
                self.ctx.append(revoke_events())
                break
            except ApprovalMoved:  # its use landed first, under the writer's lock
                if once[-1]:
                    raise ApprovalUsedError(f"approval `{approval_id}` is already used: its "
                                            "action ran under it") from None
                # a reusable one: read again, found used, it is revoked unguarded
            except IdempotencyKeyTaken:  # another revoke landed first: read again, refused
                continue
        else:  # pragma: no cover - the third read finds it used or revoked
            raise JournalError(f"approval `{approval_id}`: its revoke could not be written; "
                               "revoke again")
        return self.book.get(approval_id).approval

    def _refused(self, state: ApprovalState, approver_id: str, asked: ApprovalStatus,
                 exc: ApprovalError, now: datetime) -> None:
        """Journal a refused attempt to decide (or revoke) an approval, before it is
        raised: who claimed to be whom, what they asked, why not."""
        self.ctx.append([NewEvent(
            run_id=state.approval.run_id, kind="approval.refused",
            subject="approval:" + state.approval.action_digest, actor=approver_id, at=now,
            payload={"approval_id": state.approval.id, "claimed_approver": approver_id,
                     "asked": str(asked), "reason": exc.message})])

    def view(self, approval_id: str, *, viewer: str) -> HumanApproval:
        """The approval as ``viewer`` sees it, the view journaled (``approval.viewed``) only
        when it is news (:func:`.approvals.view_is_news`): who saw it, and in which state,
        without a row per poll. Two processes' views at once may both be journaled.

        Read bounded (:meth:`.approvals.ApprovalBook.viewed`): the approval as ``get``
        reads it, and the newest events of its digest in its run, never all of them (an
        agent polling its approval made each view linear in the approvals it asked for
        the action, ``tests/security/test_92``)."""
        check_human_input(self.ctx.config.input_limits,
                          ids={"approval_id": approval_id, "viewer": viewer})
        state, recent = self.book.viewed(approval_id)
        if view_is_news(recent, approval_id, viewer):
            self.ctx.append([NewEvent(run_id=state.approval.run_id, kind="approval.viewed",
                                      subject="approval:" + state.approval.action_digest,
                                      actor=viewer, at=self.ctx.clock(),
                                      payload={"approval_id": approval_id})])
        return state.approval

    def resume(self, run_id: str) -> list[Outcome]:
        """Re-submit the proposals of a run that wait for an approval that is now given."""
        outcomes: list[Outcome] = []
        for st in self.book.decided_for_run(run_id):
            resumed = self.resume_approval(st.approval, run_id)
            if resumed is not None:
                outcomes.append(resumed)
        if not outcomes and not self.ctx.journal.has_run(run_id):
            raise UnknownNameError(f"unknown run `{run_id}`")
        return outcomes

    def resume_approval(self, a: HumanApproval, run_id: str) -> Outcome | None:
        """Re-submit the proposal that asked for ``a`` in ``run_id`` when ``a`` is approved
        and still usable there: its outcome (the key's recorded one, ``replayed``, when
        the key's action ran under another approval), else None."""
        if a.status is not ApprovalStatus.APPROVED:
            return None
        if self.book.usable(a.action_digest, self.ctx.clock(), a.requested_by,
                            run_id=run_id) is None:
            return None
        proposal = self.book.requested_proposal(a)
        if ended(self.ctx.journal, run_id, proposal.id):
            # INVARIANT: a proposal that has its final outcome waits for nothing: resuming
            # it again writes nothing (a reusable approval stays usable in its run; its
            # replay, `proposal.replayed`, was journaled at each resume; a replayed key's,
            # three events: tests/security/test_378)
            return None
        return self.submit(proposal)
