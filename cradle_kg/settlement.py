"""After gate 2: commit a verified outcome, compensate a failed verification, or escalate.

Mixed into :class:`~cradle_kg.runtime.Runtime`. Failure has several forms (§3.11): a
failed verification runs the tool's declared compensation as a governed proposal of its
own (both gates, verified, linked to the failed action); without one — or when it fails —
and for inconclusive or failed calls, a human task is opened. Nothing commits here unless
it was verified.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .escalation import human_task_event
from .journal import NewEvent
from .records import (
    RUNTIME_ACTOR,
    Action,
    ActionRequest,
    AuditEvent,
    Outcome,
    OutcomeStatus,
    Proposal,
)
from .tools import ToolSpec

#: a proposal whose id starts so is a compensation: its own failure escalates, never compensates
COMPENSATION_PREFIX = "comp:"


def _with_reason(outcome: Outcome, reason: str) -> Outcome:
    return outcome.model_copy(update={"reasons": (*outcome.reasons, reason)})


class Settlement:
    if TYPE_CHECKING:  # provided by Runtime
        clock: Callable[[], datetime]

        def _append(self, events: Sequence[NewEvent]) -> list[AuditEvent]: ...

        def _submit(self, raw: Proposal | dict[str, Any]) -> Outcome: ...

        @staticmethod
        def _outcome_event(outcome: Outcome, subject: str, *, reconciled: bool = False,
                           at: datetime | None = None) -> NewEvent: ...

    def _settle(self, proposal: Proposal, spec: ToolSpec, action: Action, outcome: Outcome,
                events: list[NewEvent], *, reconciled: bool) -> Outcome:
        """Commit a verified outcome; compensate a failed verification; escalate the rest."""
        if outcome.status is OutcomeStatus.EXECUTED:
            self._append([*events, self._outcome_event(outcome, action.id,
                                                       reconciled=reconciled)])
            return outcome
        tool = spec.compensation_tool
        if (outcome.status is OutcomeStatus.VERIFICATION_FAILED and tool
                and not proposal.id.startswith(COMPENSATION_PREFIX)):
            comp = Proposal(
                id=COMPENSATION_PREFIX + action.id.removeprefix("act:"),
                task_id=proposal.task_id, agent_id=proposal.agent_id,
                run_id=proposal.effective_run_id, step=proposal.step, attempt=proposal.attempt,
                on_behalf_of=proposal.on_behalf_of, tenant=proposal.tenant,
                action=ActionRequest(action_type=tool, target=action.target,
                                     arguments=action.arguments,
                                     environment=action.environment))
            pending = _with_reason(outcome, f"compensate with `{tool}`: proposal `{comp.id}`")
            self._append([*events, NewEvent(
                run_id=outcome.run_id, kind="compensation.requested", subject=action.id,
                actor=RUNTIME_ACTOR, at=self.clock(),
                payload={"failed_action_id": action.id, "proposal": comp.model_dump(mode="json"),
                         "outcome": pending.model_dump(mode="json")})])
            return self._compensate(comp, pending, action, reconciled=reconciled)
        return self._escalate(outcome, action, events, reconciled=reconciled)

    def _compensate(self, comp: Proposal, pending: Outcome, action: Action, *,
                    reconciled: bool = False) -> Outcome:
        """Run the compensation through both gates; link it to the failed action."""
        done = self._submit(comp)
        link = NewEvent(run_id=pending.run_id, kind="compensation.recorded", subject=action.id,
                        actor=RUNTIME_ACTOR, at=self.clock(),
                        payload={"failed_action_id": action.id, "proposal_id": comp.id,
                                 "compensation_action_id": done.action.id if done.action
                                 else None, "status": str(done.status)})
        if done.status is OutcomeStatus.EXECUTED:
            final = _with_reason(pending, f"compensated: `{comp.id}` executed and verified")
            self._append([link, self._outcome_event(final, action.id, reconciled=reconciled)])
            return final
        return self._escalate(
            _with_reason(pending, f"compensation `{comp.id}` ended `{done.status}`"), action,
            [link], reconciled=reconciled, code="compensation_failed")

    def _escalate(self, outcome: Outcome, action: Action, events: list[NewEvent], *,
                  reconciled: bool, code: str | None = None) -> Outcome:
        """Nothing was committed and the runtime cannot put it right: a human task."""
        code = code or {OutcomeStatus.VERIFICATION_FAILED: "verification_failed",
                        OutcomeStatus.INCONCLUSIVE: "inconclusive"}.get(outcome.status,
                                                                        "tool_failed")
        reason = {"verification_failed": "the verification failed and no compensation is "
                                         "declared",
                  "inconclusive": "the verification is inconclusive: nothing was committed",
                  "compensation_failed": "the compensation did not execute and verify",
                  }.get(code, "the call failed: the state of the target is unknown")
        task = human_task_event(run_id=outcome.run_id, subject=action.id, code=code,
                                reason=reason, actor=RUNTIME_ACTOR, at=self.clock(),
                                details={"action_id": action.id,
                                         "proposal_id": outcome.proposal_id,
                                         "status": str(outcome.status)})
        final = _with_reason(outcome, f"escalated: human task `{task.payload['task_id']}`: "
                                      f"{reason}")
        self._append([*events, task, self._outcome_event(final, action.id,
                                                         reconciled=reconciled)])
        return final
