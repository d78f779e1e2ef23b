"""Escalation: when the runtime stops deciding and hands the case to a human.

A human task is a journal event, ``human_task.opened``, that names the run, the action
or proposal concerned, a stable reason code and the reason in words. The runtime opens
one when it must not go on by itself:

* ``repair_budget_exhausted`` — a run used up its repairs (``config.repair_budget``);
* ``verification_failed`` — a verification failed and no compensation is declared, or
  the compensation did not execute and verify;
* ``inconclusive`` / ``tool_failed`` — nothing can be committed and nobody knows the
  state of the target;
* ``reconcile_*`` — crash recovery found an intent whose effect it cannot establish or
  may not replay (a tool of idempotency class ``none``, a tool without lookup, a lookup
  that raised).

Tasks are read back from the journal's derived ``human_tasks`` (:func:`open_tasks`,
:func:`task_page`: the open ones through an index, never a fold of every task); a person
closes one with ``human_task.resolved`` (who, when, what they did), which is what makes the
run stop reading ``escalated``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ..canonical import content_hash
from ..errors import ApprovalError, InputError, JournalError, UnknownNameError
from ..inputs import check_human_input, check_lookup, check_page
from ..records import (
    RUNTIME_ACTOR,
    AuditEvent,
    Outcome,
    OutcomeStatus,
    Proposal,
    RuntimeDecision,
)
from ..storage import Journal, NewEvent, WaitingReached
from ..storage.tasks_sql import TASK_AGENT
from .approval_flow import check_waiting, waiting_error
from .approvals import ApprovalBook, excluded_for_task
from .context import LoopContext, last_seq
from .outcomes import outcome_event

HUMAN_TASK_OPENED = "human_task.opened"
HUMAN_TASK_RESOLVED = "human_task.resolved"


@dataclass(frozen=True)
class HumanTask:
    id: str
    run_id: str
    code: str
    reason: str
    subject: str
    opened_at: datetime
    resolved_by: str | None = None
    resolved_at: datetime | None = None
    resolution: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "run_id": self.run_id, "code": self.code,
                "reason": self.reason, "subject": self.subject,
                "opened_at": self.opened_at.isoformat(),
                "resolved_by": self.resolved_by, "resolution": self.resolution,
                "resolved_at": self.resolved_at.isoformat() if self.resolved_at else None}


def task_id_for(run_id: str, subject: str, code: str) -> str:
    return "task:" + content_hash([run_id, subject, code])[7:31]


def human_task_event(*, run_id: str, subject: str, code: str, reason: str, actor: str,
                     at: datetime, details: dict[str, Any] | None = None) -> NewEvent:
    """The event that opens a human task about ``subject`` (an action or proposal id)."""
    task_id = task_id_for(run_id, subject, code)
    return NewEvent(run_id=run_id, kind=HUMAN_TASK_OPENED, subject=task_id, actor=actor, at=at,
                    payload={"task_id": task_id, "about": subject, "code": code,
                             "reason": reason, **(details or {})})


def _task(opened: AuditEvent, done: AuditEvent | None) -> HumanTask:
    return HumanTask(
        id=opened.payload["task_id"], run_id=opened.run_id, code=opened.payload["code"],
        reason=opened.payload["reason"], subject=opened.payload["about"],
        opened_at=opened.at, resolved_by=done.actor if done else None,
        resolved_at=done.at if done else None,
        resolution=done.payload["note"] if done else None)


def task_page(journal: Journal, *, run_id: str | None = None, include_resolved: bool = False,
              limit: int | None = None, offset: int = 0) -> tuple[list[HumanTask], int]:
    """One page of the human tasks (of one run), oldest first — the open ones, or every one
    with its resolution — and how many there are: read from the derived ``human_tasks``
    (:meth:`~cradle_kg.storage.Journal.human_tasks`), so the events decoded are the page's,
    not every task event of the journal (``tests/security/test_84``). A ``limit`` or
    ``offset`` no journal can bind is an ``InputError`` (``tests/security/test_96``)."""
    check_page(limit=limit, offset=offset)
    check_lookup(run_id, where="run")
    rows, total = journal.human_tasks(run_id=run_id, include_resolved=include_resolved,
                                      limit=limit, offset=offset)
    return [_task(opened, done) for opened, done in rows], total


def open_tasks(journal: Journal, *, run_id: str | None = None,
               include_resolved: bool = False) -> list[HumanTask]:
    """The human tasks still open (in one run, or in all; with ``include_resolved``, every
    one opened, with its resolution), oldest first (:func:`task_page` without a limit)."""
    return task_page(journal, run_id=run_id, include_resolved=include_resolved)[0]


def task_from_events(task_id: str, events: Sequence[AuditEvent]) -> HumanTask | None:
    """The task ``task_id`` folded from its own events (those about it: its subject), or
    ``None`` if it was never opened. Closing a task reads these, not every task of the
    journal (``tests/security/test_73``)."""
    opened = next((e for e in events if e.kind == HUMAN_TASK_OPENED
                   and e.payload.get("task_id") == task_id), None)
    if opened is None:
        return None
    done = next((e for e in reversed(events) if e.kind == HUMAN_TASK_RESOLVED
                 and e.payload.get("task_id") == task_id), None)
    return _task(opened, done)


def _proposal_of(events: Sequence[AuditEvent], task_id: str) -> str | None:
    """The proposal the opening of ``task_id`` names (its ``proposal_id``), if any."""
    opened = next((e for e in events if e.kind == HUMAN_TASK_OPENED
                   and e.payload.get("task_id") == task_id), None)
    about = None if opened is None else opened.payload.get("proposal_id")
    return about if isinstance(about, str) else None


def resolution_event(task: HumanTask, *, by: str, note: str, at: datetime) -> NewEvent:
    """The event that closes a human task: who did what about it."""
    return NewEvent(run_id=task.run_id, kind=HUMAN_TASK_RESOLVED, subject=task.id, actor=by,
                    at=at, payload={"task_id": task.id, "about": task.subject, "note": note,
                                    "code": task.code})


def repairs_in_run(journal: Journal, run_id: str) -> int:
    """How many ``repair`` outcomes the run has had so far (the repair budget counts them):
    the derived count (:meth:`~cradle_kg.storage.Journal.run_repairs`), one probe — not
    every event of the run read again at each repair (``tests/security/test_84``)."""
    return journal.run_repairs(run_id)


def repair_or_escalate(ctx: LoopContext, proposal: Proposal, decision: RuntimeDecision,
                       base: Sequence[NewEvent], now: datetime, *,
                       capped: bool = True) -> Outcome:
    """The proposal goes back with its reasons — until the run's repair budget is spent.
    ``capped=False``: the runtime's own proposal (a compensation), whose escalation is
    counted in the agent's ``waiting_per_agent`` but never refused for it."""
    run_id = proposal.effective_run_id
    budget = ctx.config.repair_budget
    used = repairs_in_run(ctx.journal, run_id)
    if used < budget:
        outcome = Outcome(run_id=run_id, proposal_id=proposal.id,
                          status=OutcomeStatus.REPAIR, decision=decision,
                          reasons=(*decision.reasons, f"repair {used + 1} of {budget}"))
        ctx.append([*base, outcome_event(outcome, proposal.id)])
        return outcome
    reason = f"repair budget of {budget} exhausted in run `{run_id}`: a human takes over"
    # INVARIANT: the task waits for a person on the agent's behalf, and counts in its
    # ``waiting_per_agent`` with its approvals and steps (named in the payload: counted
    # under the journal's lock). Before, every proposal sent back past a run's repair
    # budget opened one more task in the inbox, without end (tests/security/test_209)
    waiting = (check_waiting(ctx.config.input_limits, ctx.journal, proposal.agent_id,
                             run=run_id) if capped else None)
    task = replace(human_task_event(run_id=run_id, subject=proposal.id,
                                    code="repair_budget_exhausted", reason=reason,
                                    actor=RUNTIME_ACTOR, at=now,
                                    details={"proposal_id": proposal.id,
                                             "last_reasons": list(decision.reasons),
                                             TASK_AGENT: proposal.agent_id}),
                   waiting=waiting)
    outcome = Outcome(run_id=run_id, proposal_id=proposal.id,
                      status=OutcomeStatus.ESCALATED, decision=decision,
                      reasons=(*decision.reasons, f"escalated: human task "
                               f"`{task.payload['task_id']}`: {reason}"))
    try:
        ctx.append([*base, task, outcome_event(outcome, proposal.id)])
    except WaitingReached as reached:  # counted again under the lock: nothing written
        raise waiting_error(reached.cap.agent, reached.waiting, reached.cap.limit) from None
    return outcome


def task_scope(journal: Journal, book: ApprovalBook, task: HumanTask) -> str | None:
    """The scope of the approval the task's action ran under (its ``action.intent`` names
    it: one row), or None — a task about a proposal, or an action no approval covered."""
    intents = journal.events_for_subject(task.subject, run_id=task.run_id,
                                         kinds=("action.intent",))
    approval_id = intents[-1].payload.get("approval_id") if intents else None
    if not isinstance(approval_id, str):
        return None
    try:
        return book.get(approval_id).approval.scope
    except UnknownNameError:
        return None


def _check_scope(ctx: LoopContext, book: ApprovalBook, task: HumanTask, by: str) -> None:
    """INVARIANT: an approver limited to scopes closes only the tasks of actions that ran
    under an approval within one of them; any other task is for `*` (before, any approver
    closed any task: tests/security/test_186)."""
    approver = book.approver(by)
    if approver is None or "*" in approver.scopes:
        return
    scope = task_scope(ctx.journal, book, task)
    if scope is None or scope not in approver.scopes:
        within = f"within scope `{scope}`" if scope else "within no scope"
        raise ApprovalError(f"`{by}` may not resolve human task `{task.id}`: its action ran "
                            f"{within}, and they decide only within "
                            + ", ".join(f"`{x}`" for x in approver.scopes))


def resolve_task(ctx: LoopContext, book: ApprovalBook, task_id: str, *, by: str, token: str,
                 note: str) -> HumanTask:
    """Close a human task (an escalation): an authenticated approver says what they did."""
    check_human_input(ctx.config.input_limits, ids={"task_id": task_id, "by": by},
                      texts={"note": note, "token": token})
    if not note.strip():
        raise InputError("resolving a human task needs a note saying what was done")
    # INVARIANT: resolved once — written only over the task's events it was read with: of
    # two people closing it at once, the second reads again and finds it resolved
    def resolution() -> list[NewEvent]:
        seen = ctx.journal.events_for_subject(task_id)
        task = task_from_events(task_id, seen)
        if task is None:
            raise UnknownNameError(f"unknown human task `{task_id}`",
                                   hint="`cradle-kg tasks list` shows them")
        if task.resolved_by is not None:
            raise InputError(f"human task `{task_id}` was already resolved by "
                             f"`{task.resolved_by}`")
        book.authenticate(by, token)
        # INVARIANT: the run's agent, its principal and who started the run never close
        # what it escalated (before, the agent's principal closed her own agent's
        # escalation: tests/security/test_179)
        # and the task's own proposal's agent, its principal, on whose behalf: a run may
        # hold several agents' proposals (tests/security/test_599)
        if by in excluded_for_task(ctx.journal, ctx.config, task.run_id,
                                   _proposal_of(seen, task_id)):
            raise ApprovalError(f"`{by}` is the agent of run `{task.run_id}` or of the "
                                f"proposal its human task `{task_id}` is about, the one it "
                                f"acts for or who started it, and cannot resolve it: a "
                                f"second look is someone else's")
        _check_scope(ctx, book, task, by)
        event = resolution_event(task, by=by, note=note, at=ctx.clock())
        return [replace(event, if_last=last_seq(seen))]

    ctx.append_unmoved(resolution, attempts=2, gave_up=JournalError(
        f"human task `{task_id}`: its events keep changing; resolve it again"))
    task = task_from_events(task_id, ctx.journal.events_for_subject(task_id))
    assert task is not None  # it was just read open, and resolved over what was read
    return task

