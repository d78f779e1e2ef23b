"""From an allowed decision to a verified outcome: the action, its intent, the call.

The action record is built from the proposal and gate 1's result; an approve-once it runs
under is consumed in the same transaction as the intent, so two executions cannot both
use it. The gateway journals the intent durably, calls the tool and journals what it
answered; a tool that raised is called again, with the same key, when its idempotency
class allows it. A key another submission already holds is answered from the record. A
worker that lost the action to a recovery pass while it was stalled
(:class:`.gateway.Superseded`) stops where it noticed, and answers with what was recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from ..crashpoints import crashpoint
from ..records import (
    RUNTIME_ACTOR,
    Action,
    IdempotencyClass,
    Outcome,
    OutcomeStatus,
    Proposal,
    Provenance,
    RuntimeDecision,
    SideEffectClass,
)
from ..storage import ApprovalGuard, IdempotencyKeyTaken, NewEvent, SubjectMoved
from ..tools import ToolCall, ToolSpec
from .approval_flow import ApprovalFlow
from .approvals import ApprovalBook, excluded_for
from .commit import Commit
from .context import LoopContext
from .escalation import human_task_event
from .gate1.checks import GateResult
from .gate1.decision import action_id
from .gateway import Gateway, GatewayResult, KeyAlreadyClaimed, Superseded
from .outcomes import Dumped, outcome_event, recorded_outcome
from .policies import PolicySet

#: calls of a tool that raised, with the same key, when its idempotency class allows it
TOOL_RETRY_LIMIT = 2
_RETRYABLE = (IdempotencyClass.KEYED, IdempotencyClass.NATURAL)
#: a key's recorded outcome that is not the end of its action
_UNFINISHED = (OutcomeStatus.AWAITING_APPROVAL, OutcomeStatus.IN_PROGRESS)


def approval_was_needed(gate: GateResult) -> bool:
    """Gate 1 allowed this proposal because a human approval covered it."""
    return any(c.check in ("approval", "risk") and c.reasons
               and c.reasons[0].startswith("a valid human approval") for c in gate.checks)


def one_transaction(spec: ToolSpec) -> bool:
    """Whether a call of ``spec`` is journaled in one transaction, intent to outcome.

    Intent before act exists for the question recovery asks after a crash — *did the
    effect happen?* — and for the claim of the key, so that an effect cannot happen twice.
    A read-only tool has no effect: a crash before its single commit leaves nothing to
    reconcile (nothing was journaled, nothing was answered, and submitting again reads
    again); the claims (proposal id, key, an approve-once) are taken at that commit, and a
    submission that loses one discards what it read and answers from the record. A tool
    with a compensation is excluded (the compensation is a submission of its own, which
    must see what came before it in the journal). Every other class keeps its intent
    durable before the call.
    """
    return spec.side_effect_class is SideEffectClass.READ_ONLY and not spec.compensation_tool


class Execution:
    def __init__(self, ctx: LoopContext, *, gateway: Gateway, approvals: ApprovalBook,
                 approval_flow: ApprovalFlow, commit: Commit, policies: PolicySet) -> None:
        self.ctx = ctx
        self.gateway = gateway
        self.approvals = approvals
        self.approval_flow = approval_flow
        self.commit = commit
        self.policies = policies

    def action(self, proposal: Proposal, gate: GateResult, now: datetime, *,
               executed: bool) -> Action:
        assert gate.spec is not None
        a = proposal.action
        packs = tuple(self.policies.pack_versions)
        return Action(
            id=action_id(proposal, gate),
            proposal_id=proposal.id, action_type=a.action_type, target=a.target,
            arguments=a.arguments, side_effect_class=gate.spec.side_effect_class,
            idempotency_key=gate.idempotency_key, risk_level=gate.risk,
            environment=a.environment, input_hash=gate.input_hash,
            executed_by=proposal.agent_id if executed else None,
            executed_at=now if executed else None,
            provenance=Provenance(source="gateway", actor=proposal.agent_id, timestamp=now,
                                  tool_ref=gate.spec.ref,
                                  policy_version=(gate.policy_version
                                                  or self.policies.engine.version),
                                  pack_versions=packs, input_hash=gate.input_hash),
        )

    def replayed(self, proposal: Proposal, gate: GateResult, decision: RuntimeDecision,
                 base: Sequence[NewEvent]) -> Outcome:
        """The key already has an intent: its recorded outcome, nothing runs again.

        A proposal that goes on under a person's approval (its resume) while the key's
        action ran under another — the agent asked in two runs, both were approved — ends
        here: :meth:`_closing` records its outcome and closes its approval."""
        action = self.action(proposal, gate, decision.decided_at, executed=False)
        recorded = recorded_outcome(self.ctx.journal, action.id)
        events = [*base, NewEvent(
            run_id=proposal.effective_run_id, kind="action.replayed", subject=action.id,
            actor=RUNTIME_ACTOR, at=decision.decided_at,
            payload={"idempotency_key": gate.idempotency_key, "decision_id": decision.id,
                     "recorded": recorded is not None})]
        closing = self._closing(proposal, gate, decision, action, recorded)
        try:
            self.ctx.append([*events, *closing])
        except IdempotencyKeyTaken:
            # another resume of this approval consumed it first: that one recorded the
            # proposal's outcome, and this one is answered from it, nothing written
            mine = self.ctx.journal.latest_outcome(proposal.effective_run_id, proposal.id)
            if mine is None:
                raise
            return Outcome.model_validate(mine.payload["outcome"])
        if recorded is None:
            return Outcome(run_id=proposal.effective_run_id, proposal_id=proposal.id,
                           status=OutcomeStatus.IN_PROGRESS, decision=decision, replayed=True,
                           reasons=(f"another submission holds key `{gate.idempotency_key}` "
                                    "and has not finished",))
        return recorded.model_copy(update={"replayed": True})

    def _closing(self, proposal: Proposal, gate: GateResult, decision: RuntimeDecision,
                 action: Action, recorded: Outcome | None) -> list[NewEvent]:
        """What a replay under the proposal's own approval writes besides its replay: the
        approval consumed (an approve-once) and the proposal's outcome, the key's recorded
        one with ``replayed: true``; nothing for any other replay.

        INVARIANT: an approval whose key's action ran already is closed by the resume that
        finds it so, and its proposal ends: before, a replay recorded no outcome of its own
        and consumed nothing — its run read as waiting forever, its approval stayed
        approved and unused, and each ``runs resume`` replayed it again, three events
        (``tests/security/test_378``)."""
        if recorded is None or recorded.status in _UNFINISHED or \
                not approval_was_needed(gate) or gate.spec is None:
            return []
        run_id, now = proposal.effective_run_id, decision.decided_at
        approval = self.approvals.usable(gate.action_digest, now, proposal.agent_id,
                                         run_id=run_id,
                                         also_excluded=excluded_for(self.ctx.config, proposal),
                                         tool_ref=gate.spec.ref, scope=gate.approval_scope)
        if approval is None:
            return []
        closing: list[NewEvent] = []
        if approval.once:
            closing.append(NewEvent(
                run_id=run_id, kind="approval.consumed",
                subject="approval:" + gate.action_digest, actor=proposal.agent_id, at=now,
                payload={"approval_id": approval.id, "action_id": action.id,
                         "replayed": True},
                idem_key="approval-once:" + approval.id, if_run_open=True))
        mine = recorded.model_copy(update={
            "run_id": run_id, "proposal_id": proposal.id, "decision": decision,
            "approval": approval, "replayed": True,
            "reasons": (*recorded.reasons, f"the action of key `{gate.idempotency_key}` ran "
                        f"under proposal `{recorded.proposal_id}` of run `{recorded.run_id}`"
                        f": its recorded outcome; approval `{approval.id}` ran nothing")})
        closing.append(replace(outcome_event(mine, proposal.id, at=now),
                               approval_guard=ApprovalGuard(
                                   approval.id, run_id, expires_at=approval.expires_at)))
        return closing

    def execute(self, proposal: Proposal, gate: GateResult, decision: RuntimeDecision,
                base: Sequence[NewEvent], now: datetime, *,
                dumped: Sequence[Dumped] = ()) -> Outcome:
        """``dumped``: records ``base`` journals, with their dumps (for the outcome's
        payload: :func:`.outcomes.outcome_body`)."""
        assert gate.spec is not None
        if not one_transaction(gate.spec):
            return self._execute(proposal, gate, decision, base, now, dumped)
        try:
            # written when the block ends (see above); a deferred read does not wait for the
            # disk: kept if the process dies, flushed within the journal's window
            flush = self.ctx.config.read_commit == "flushed"
            with self.ctx.one_transaction(flush=flush):
                return self._execute(proposal, gate, decision, base, now, dumped)
        except IdempotencyKeyTaken:  # lost a claim at the commit: what was read is dropped
            return self._claimed(proposal, gate, decision, base, now)

    def _claimed(self, proposal: Proposal, gate: GateResult, decision: RuntimeDecision,
                 base: Sequence[NewEvent], now: datetime) -> Outcome:
        """Another submission took this key (its recorded outcome) or the approve-once."""
        if self.ctx.journal.intent_for_key(gate.idempotency_key) is not None:
            return self.replayed(proposal, gate, decision, base)
        # the key is free: what another execution took first is the approve-once
        return self.approval_flow.request(proposal, gate, decision, base, now)

    def _execute(self, proposal: Proposal, gate: GateResult, decision: RuntimeDecision,
                 base: Sequence[NewEvent], now: datetime,
                 dumped: Sequence[Dumped] = ()) -> Outcome:
        assert gate.spec is not None and gate.arguments is not None
        spec, run_id, config = gate.spec, proposal.effective_run_id, self.ctx.config
        action = self.action(proposal, gate, now, executed=True)
        before = list(base)
        approval = self.approvals.usable(gate.action_digest, now, proposal.agent_id,
                                         run_id=run_id,
                                         also_excluded=excluded_for(config, proposal),
                                         tool_ref=spec.ref, scope=gate.approval_scope)
        if approval is None and approval_was_needed(gate):
            # the approval gate 1 saw was consumed or expired since: by another submission
            # of this key (two workers resuming the run at once: its consumption committed
            # with its intent, so the intent is visible now) → its outcome; else ask again
            return self._claimed(proposal, gate, decision, base, now)
        # INVARIANT: an approval is used only while its workflow run has not ended: its
        # consumption and the intent are written ``if_run_open`` (one probe of the run's
        # end under the writer's lock, paid by the calls an approval covers alone); a
        # cancel written before them refuses the append, nothing of it written, and the
        # proposal is decided again, denied (Runtime._submit_parsed, tests/security/test_297)
        guarded = approval is not None
        if approval is not None and approval.once:
            before.append(NewEvent(
                run_id=run_id, kind="approval.consumed",
                subject="approval:" + gate.action_digest, actor=proposal.agent_id, at=now,
                payload={"approval_id": approval.id, "action_id": action.id},
                idem_key="approval-once:" + approval.id, if_run_open=True))
        acted = action.model_dump(mode="json")  # for the intent, and the outcome's payload
        intent = NewEvent(
            run_id=run_id, kind="action.intent", subject=action.id, actor=proposal.agent_id,
            at=now, idem_key=gate.idempotency_key, caps=gate.caps,
            payload={"action": acted, "input_hash": gate.input_hash,
                     "decision_id": decision.id, "agent": proposal.agent_id,
                     "task_id": proposal.task_id,
                     # INVARIANT: the configured tenant, never the proposal's claim
                     "tenant": config.tenant_of(proposal.agent_id),
                     "cost": spec.cost, "approval_id": approval.id if approval else None,
                     "tool": spec.ref, "idempotency": str(spec.idempotency),
                     # INVARIANT: a lease held (renewed if lost): see held_lease
                     "worker": self.ctx.held_lease().id},
            if_run_open=guarded,
            # INVARIANT: nor after a person revoked it — a revoke written before the intent
            # refuses the append under the writer's lock (nothing written), and the proposal
            # is decided again: a person asked anew (tests/security/test_305)
            approval_guard=ApprovalGuard(approval.id, run_id, expires_at=approval.expires_at)
            if approval else None)
        call = ToolCall(tool_id=spec.id, target=action.target, arguments=gate.arguments,
                        idempotency_key=gate.idempotency_key, environment=action.environment,
                        dry_run=proposal.action.dry_run, run_id=run_id,
                        actor=proposal.agent_id)
        try:
            result = self.gateway.execute(spec=spec, action=action, call=call,
                                          before=before, intent=intent)
            attempt = 1
            while (result.raised and spec.idempotency in _RETRYABLE
                   and attempt <= TOOL_RETRY_LIMIT):
                # INVARIANT: a retry follows an attempt whose outcome is unknown: its
                # refusal is not the key's word (tests/security/test_593)
                result = replace(self.gateway.retry(
                    spec=spec, action=action, call=call, after=result.last_seq,
                    retry=NewEvent(
                        run_id=run_id, kind="action.retry", subject=action.id,
                        actor=RUNTIME_ACTOR, at=self.ctx.clock(),
                        payload={"idempotency_key": gate.idempotency_key, "attempt": attempt,
                                 "reason": result.observation.error,
                                 "worker": self.ctx.lease.id,
                                 "idempotency": str(spec.idempotency)})),
                    after_raised=True)
                attempt += 1
            looked_up = self._asked(spec, action, call, run_id, result)
            crashpoint("before_verification")
            if looked_up is not None:
                raised = (result.observation.error or "")[:300]
                return self.commit.verify_and_commit(
                    proposal, spec, decision, action, gate.arguments, looked_up,
                    found=f"the call raised ({raised}); the lookup found the effect of the "
                          "key: verified",
                    dumped=[*dumped, ("action", action, acted)])
            return self.commit.verify_and_commit(proposal, spec, decision, action,
                                                 gate.arguments, result,
                                                 dumped=[*dumped, ("action", action, acted)])
        except KeyAlreadyClaimed:  # raised by the intent's append only: nothing written
            return self._claimed(proposal, gate, decision, base, now)
        except Superseded as lost:
            return self._superseded(proposal, spec, decision, action, lost.why, lost.result)
        except SubjectMoved:
            return self._superseded(proposal, spec, decision, action,
                                    "another worker settled the action first: this "
                                    "worker's verification was not journaled", None)

    def _asked(self, spec: ToolSpec, action: Action, call: ToolCall, run_id: str,
               result: GatewayResult) -> GatewayResult | None:
        """What the tool's lookup finds of a call that raised (its last attempt), or None.

        INVARIANT: a call that raised — a timeout above all — has an unknown outcome, never
        a failed one: the effect may have happened (the answer came late). A tool with a
        lookup is asked, as recovery asks after a crash in the call; the effect found is
        verified and committed. Before, a timed-out upstream write whose declared read
        found it done was journaled ``failed``, its transition aborted
        (``tests/security/test_532``). No trace, or a lookup that raises: None — the call
        is settled as it raised (a human task: the state of the target is unknown)."""
        unknown = result.raised or (result.after_raised
                                    and result.observation.refusal is not None)
        if not unknown or spec.side_effect_class is SideEffectClass.READ_ONLY \
                or not self.gateway.tools.has_lookup(spec.id) or result.last_seq is None:
            return None
        try:
            return self.gateway.reconcile(spec=spec, action=action, call=call,
                                          run_id=run_id, after=result.last_seq)
        except Superseded:
            raise
        except Exception:  # INVARIANT: a lookup that fails proves nothing
            return None

    def _superseded(self, proposal: Proposal, spec: ToolSpec, decision: RuntimeDecision,
                    action: Action, why: str, late: GatewayResult | None) -> Outcome:
        """This worker no longer holds the action (see :class:`.gateway.Superseded`): the
        outcome another worker recorded is the answer (in progress while there is none).

        A call this worker made whose observation the journal refused is not lost: for a
        tool of idempotency class ``none`` (nothing dedupes it by key) a human task carries
        what the tool answered, beside whatever recovery decided without it."""
        reason = ("this worker no longer holds the action (its lease was lost, and recovery "
                  f"may take over the intent of a worker without one): {why}")
        if late is not None and spec.idempotency is IdempotencyClass.NONE:
            obs = late.observation
            self.ctx.append([human_task_event(
                run_id=proposal.effective_run_id, subject=action.id, code="superseded_call",
                reason=f"`{spec.ref}` was called by a worker whose intent recovery had taken "
                       "over; what it answered is in the details, not in the run's outcome",
                actor=RUNTIME_ACTOR, at=self.ctx.clock(),
                details={"action_id": action.id, "proposal_id": proposal.id,
                         "idempotency_key": action.idempotency_key,
                         "worker": self.ctx.lease.id, "output_hash": obs.output_hash,
                         "error": obs.error, "reported_ok": obs.reported_ok})])
            reason += "; a human task holds what the tool answered"
        recorded = recorded_outcome(self.ctx.journal, action.id)
        if recorded is None:
            return Outcome(run_id=proposal.effective_run_id, proposal_id=proposal.id,
                           status=OutcomeStatus.IN_PROGRESS, decision=decision,
                           action=action, reasons=(reason,))
        return recorded.model_copy(update={"replayed": True,
                                           "reasons": (*recorded.reasons, reason)})
