"""After gate 2: commit a verified outcome, compensate a failed verification, or escalate.

Failure has several forms (§3.11): a
failed verification runs the tool's declared compensation as a governed proposal of its
own (both gates, verified, linked to the failed action); without one — or when it fails —
and for inconclusive or failed calls, a human task is opened. Nothing commits here unless
it was verified.

Every append here is fenced (:meth:`.context.LoopContext.append_fenced`) by ``last``, the
seq of the latest event about the action its writer knows: of a worker that stalled and
the recovery pass that took its intent over, one settles the action, never both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..records import RUNTIME_ACTOR, Action, ActionRequest, Outcome, OutcomeStatus, Proposal
from ..storage import NewEvent
from ..tools import ToolSpec
from .context import LoopContext
from .escalation import human_task_event
from .outcomes import Dumped, outcome_event, with_reason

#: a proposal whose id starts so is a compensation: its own failure escalates, never compensates
COMPENSATION_PREFIX = "comp:"
#: runs a proposal through both gates (the runtime's submission, without the graph catch-up)
Submit = Callable[[Proposal], Outcome]


class Settlement:
    def __init__(self, ctx: LoopContext, *, submit: Submit) -> None:
        self.ctx = ctx
        self.submit = submit

    def settle(self, proposal: Proposal, spec: ToolSpec, action: Action, outcome: Outcome,
               events: Sequence[NewEvent], *, reconciled: bool, last: int | None,
               dumped: Sequence[Dumped] = (), refused: bool = False) -> Outcome:
        """Commit a verified outcome; compensate a failed verification; escalate the rest.
        ``dumped``: records ``events`` journal already (:func:`.outcomes.outcome_body`).
        ``refused``: the call is the tool's honoured refusal (:meth:`.commit.Commit._refused`):
        its ``failed`` outcome is recorded as it is — nothing written, nothing to put right,
        no human task, no compensation (tests/security/test_557)."""
        if outcome.status is OutcomeStatus.EXECUTED or (
                refused and outcome.status is OutcomeStatus.FAILED):
            self.ctx.append_fenced([*events, outcome_event(outcome, action.id,
                                                           reconciled=reconciled,
                                                           dumped=dumped)],
                                   subject=action.id, last=last)
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
            pending = with_reason(outcome, f"compensate with `{tool}`: proposal `{comp.id}`")
            written = self.ctx.append_fenced([*events, NewEvent(
                run_id=outcome.run_id, kind="compensation.requested", subject=action.id,
                actor=RUNTIME_ACTOR, at=self.ctx.clock(),
                payload={"failed_action_id": action.id, "proposal": comp.model_dump(mode="json"),
                         "outcome": pending.model_dump(mode="json")})],
                subject=action.id, last=last)
            return self.compensate(comp, pending, action, reconciled=reconciled,
                                   last=written[-1].seq if written else None)
        return self.escalate(outcome, action, events, reconciled=reconciled, last=last)

    def compensate(self, comp: Proposal, pending: Outcome, action: Action, *,
                   last: int | None, reconciled: bool = False) -> Outcome:
        """Run the compensation through both gates; link it to the failed action."""
        done = self.submit(comp)
        link = NewEvent(run_id=pending.run_id, kind="compensation.recorded", subject=action.id,
                        actor=RUNTIME_ACTOR, at=self.ctx.clock(),
                        payload={"failed_action_id": action.id, "proposal_id": comp.id,
                                 "compensation_action_id": done.action.id if done.action
                                 else None, "status": str(done.status)})
        if done.status is OutcomeStatus.EXECUTED:
            final = with_reason(pending, f"compensated: `{comp.id}` executed and verified")
            self.ctx.append_fenced([link, outcome_event(final, action.id,
                                                        reconciled=reconciled)],
                                   subject=action.id, last=last)
            return final
        return self.escalate(
            with_reason(pending, f"compensation `{comp.id}` ended `{done.status}`"), action,
            [link], reconciled=reconciled, code="compensation_failed", last=last)

    def escalate(self, outcome: Outcome, action: Action, events: Sequence[NewEvent], *,
                 reconciled: bool, last: int | None, code: str | None = None) -> Outcome:
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
                                reason=reason, actor=RUNTIME_ACTOR, at=self.ctx.clock(),
                                details={"action_id": action.id,
                                         "proposal_id": outcome.proposal_id,
                                         "status": str(outcome.status)})
        final = with_reason(outcome, f"escalated: human task `{task.payload['task_id']}`: "
                                      f"{reason}")
        self.ctx.append_fenced([*events, task, outcome_event(final, action.id,
                                                             reconciled=reconciled)],
                               subject=action.id, last=last)
        return final
