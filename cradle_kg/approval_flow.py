"""The human side of an approval: deciding, viewing, and continuing the run afterwards.

Mixed into :class:`~cradle_kg.runtime.Runtime`; kept apart so the loop module reads like
the loop. An approval is bound to one decision, the digest of the exact action and its
run (:mod:`cradle_kg.approvals` holds the rules); a run that waits holds no thread, so
deciding — here, in any process — is what lets it go on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .errors import ApprovalError, InputError, UnknownNameError
from .escalation import HumanTask, open_tasks, resolution_event
from .inputs import check_id, check_value
from .journal import Journal, NewEvent
from .records import ApprovalStatus, AuditEvent, HumanApproval, Outcome, OutcomeStatus, Proposal

if TYPE_CHECKING:
    from .approvals import ApprovalBook
    from .config import RuntimeConfig


class ApprovalFlow:
    if TYPE_CHECKING:  # provided by Runtime
        approvals: ApprovalBook
        journal: Journal
        config: RuntimeConfig
        clock: Callable[[], datetime]

        def _append(self, events: Sequence[NewEvent]) -> list[AuditEvent]: ...

        def submit(self, raw: Proposal | dict[str, Any]) -> Outcome: ...

        @staticmethod
        def _outcome_event(outcome: Outcome, subject: str, *, reconciled: bool = False,
                           at: datetime | None = None) -> NewEvent: ...

    def _check_human_input(self, *, ids: dict[str, str | None],
                           texts: dict[str, str | None] | None = None) -> None:
        """What a person types (ids, a reason, a note) within the input limits, checked
        before anything about it is journaled — a refusal is journaled too."""
        limits = self.config.input_limits
        for where, value in ids.items():
            check_id(value, limits=limits, where=where)
        for where, text in (texts or {}).items():
            check_value(text, limits=limits, where=where)

    def decide_approval(self, approval_id: str, *, approver_id: str, token: str,
                        status: ApprovalStatus, once: bool = True, scope: str | None = None,
                        until: datetime | None = None, reason: str | None = None,
                        resume: bool = True) -> tuple[HumanApproval, Outcome | None]:
        """Record a human decision; an approval resumes the waiting proposal by itself.

        A refused attempt (unknown approver, wrong token, self-approval, scope, expiry) is
        journaled as ``approval.refused`` before the :class:`ApprovalError` is raised. A
        rejection or a request for changes ends the wait: the proposal's outcome becomes
        ``denied`` or ``repair``, with the approver's reason.
        """
        self._check_human_input(ids={"approval_id": approval_id, "approver_id": approver_id,
                                     "scope": scope}, texts={"reason": reason, "token": token})
        state = self.approvals.get(approval_id)
        now = self.clock()
        subject = "approval:" + state.approval.action_digest
        try:
            event = self.approvals.decision_event(state, approver_id=approver_id, token=token,
                                                  status=status, now=now, once=once,
                                                  scope=scope, until=until, reason=reason)
        except ApprovalError as exc:
            self._append([NewEvent(run_id=state.approval.run_id, kind="approval.refused",
                                   subject=subject, actor=approver_id, at=now,
                                   payload={"approval_id": approval_id,
                                            "claimed_approver": approver_id,
                                            "asked": str(status), "reason": exc.message})])
            raise
        events = [event]
        if status is not ApprovalStatus.APPROVED:
            proposal = self._requested_proposal(state.approval)
            ended = state.approval.model_copy(update={
                "status": status, "approver_id": approver_id, "decided_at": now,
                "reason": reason})
            word = "rejected" if status is ApprovalStatus.REJECTED else "changes requested"
            events.append(self._outcome_event(Outcome(
                run_id=ended.run_id, proposal_id=proposal.id,
                status=(OutcomeStatus.DENIED if status is ApprovalStatus.REJECTED
                        else OutcomeStatus.REPAIR), approval=ended,
                reasons=(f"{word} by `{approver_id}`" + (f": {reason}" if reason else ""),)),
                proposal.id, at=now))
        self._append(events)
        updated = self.approvals.get(approval_id).approval
        outcome = None
        if resume and status is ApprovalStatus.APPROVED:
            outcome = self.submit(self._requested_proposal(updated))
        return updated, outcome

    def _requested_proposal(self, approval: HumanApproval) -> Proposal:
        for event in self.journal.events_for_subject("approval:" + approval.action_digest):
            if (event.kind == "approval.requested"
                    and event.payload["approval"]["id"] == approval.id):
                return Proposal.model_validate(event.payload["proposal"])
        raise UnknownNameError(f"no proposal recorded for approval `{approval.id}`")

    def resolve_task(self, task_id: str, *, by: str, token: str, note: str) -> HumanTask:
        """Close a human task (an escalation): an authenticated approver says what they did."""
        self._check_human_input(ids={"task_id": task_id, "by": by},
                                texts={"note": note, "token": token})
        if not note.strip():
            raise InputError("resolving a human task needs a note saying what was done")
        task = next((t for t in open_tasks(self.journal) if t.id == task_id), None)
        if task is None:
            raise UnknownNameError(f"unknown human task `{task_id}`",
                                   hint="`cradle-kg tasks list` shows them")
        if task.resolved_by is not None:
            raise InputError(f"human task `{task_id}` was already resolved by "
                             f"`{task.resolved_by}`")
        self.approvals.authenticate(by, token)
        self._append([resolution_event(task, by=by, note=note, at=self.clock())])
        return next(t for t in open_tasks(self.journal) if t.id == task_id)

    def view_approval(self, approval_id: str, *, viewer: str) -> HumanApproval:
        self._check_human_input(ids={"approval_id": approval_id, "viewer": viewer})
        state = self.approvals.get(approval_id)
        self._append([NewEvent(run_id=state.approval.run_id, kind="approval.viewed",
                               subject="approval:" + state.approval.action_digest, actor=viewer,
                               at=self.clock(), payload={"approval_id": approval_id})])
        return state.approval

    def resume(self, run_id: str) -> list[Outcome]:
        """Re-submit the proposals of a run that wait for an approval that is now given."""
        outcomes: list[Outcome] = []
        for st in self.approvals.all():
            a = st.approval
            if a.run_id != run_id or a.status is not ApprovalStatus.APPROVED:
                continue
            if self.approvals.usable(a.action_digest, self.clock(), a.requested_by,
                                     run_id=run_id) is None:
                continue
            outcomes.append(self.submit(self._requested_proposal(a)))
        if not outcomes and run_id not in self.journal.run_ids():
            raise UnknownNameError(f"unknown run `{run_id}`")
        return outcomes
