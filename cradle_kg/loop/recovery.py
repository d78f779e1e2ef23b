"""Crash recovery: an intent without its outcome is reconciled before anything else.

"Le problème du mail parti deux fois" (seed 003): a process calls a tool, dies before it
writes that it did, and on restart sends the mail again. Here the intent (with its
idempotency key) is journaled durably before the call, so on restart every
``action.intent`` without a ``run.outcome`` is a question — *did the effect happen?* —
and the answer is established, never guessed:

1. the call had returned and its observation is in the journal → verify it (gate 2,
   with the tool's independent verifier) and commit or abort as usual;
2. the tool has a lookup → ask the remote system about the key. Found: journal a
   *reconciled* observation, verify, commit or abort. Not found: a tool of idempotency
   class ``keyed`` or ``natural`` is called again **with the same key**, under the
   intent already recorded (an ``action.retry`` event, never a second intent);
3. a read-only tool is simply called again: a read cannot duplicate an effect;
4. otherwise — class ``none``, no lookup, a lookup that raises, or a tool registered now
   in another version than the one the intent called (its class and lookup say nothing of
   what that version did) — a human task is opened and the run's outcome says
   ``escalated``. Nothing is replayed blindly.

Every outcome written here is marked ``reconciled`` in the journal.

Who is dead? An intent whose worker still holds its lease (:mod:`.lease`) is *in
flight* (another process, or another thread of this one) and is left alone. Recovery
passes are serialized by the journal's ``exclusive("recovery")`` lock (a file lock next to
a SQLite journal, an advisory lock on PostgreSQL), across every worker on the journal.

A worker found without its lease may still be alive — stalled, its lease's session ended
by the server — and come back. So every event a pass writes about the action is fenced by
the seq of the latest event about it the pass read (``if_last``): if that worker wrote
since, nothing is written and the intent is reported ``in_flight`` (the next pass reads it
again); and the worker, finding the pass's events, stops (:class:`.gateway.Superseded`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..crashpoints import crashpoint
from ..records import (
    Action,
    AuditEvent,
    ExecutionObservation,
    IdempotencyClass,
    Outcome,
    OutcomeStatus,
    Proposal,
    RuntimeDecision,
    SideEffectClass,
)
from ..storage import NewEvent, SubjectMoved
from ..tools import ToolCall, ToolRegistry, ToolSpec
from .commit import Commit
from .context import LoopContext
from .escalation import human_task_event
from .gateway import Gateway, GatewayResult, Superseded
from .outcomes import outcome_event
from .settlement import Settlement

RECOVERY_ACTOR = "cradle-kg/recovery"


# --- the report ---------------------------------------------------------------------


@dataclass(frozen=True)
class Reconciliation:
    """What recovery did about one dangling intent."""

    action_id: str
    run_id: str
    tool: str
    idempotency_key: str
    #: reconciled · retried · human_task · compensation_resumed · in_flight · deferred
    result: str
    outcome: str | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"action_id": self.action_id, "run_id": self.run_id, "tool": self.tool,
                "idempotency_key": self.idempotency_key, "result": self.result,
                "outcome": self.outcome, "detail": self.detail}


@dataclass
class RecoveryReport:
    dangling: int = 0
    items: list[Reconciliation] = field(default_factory=list)

    def count(self, result: str) -> int:
        return sum(1 for i in self.items if i.result == result)

    @property
    def unresolved(self) -> list[Reconciliation]:
        """Intents left dangling: in flight elsewhere, or whose tool is not registered here."""
        return [i for i in self.items if i.result in ("in_flight", "deferred")]

    def to_dict(self) -> dict[str, Any]:
        results = ("reconciled", "retried", "human_task", "compensation_resumed",
                   "in_flight", "deferred")
        return {"dangling": self.dangling,
                "summary": {r: self.count(r) for r in results},
                "items": [i.to_dict() for i in self.items]}


# --- the pass -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Dangling:
    intent: AuditEvent
    last_attempt: AuditEvent
    attempts: int
    after: list[AuditEvent]
    action: Action
    proposal: Proposal
    decision: RuntimeDecision
    #: the seq of the latest event about the action: what this pass writes is fenced by it
    last: int


class Recovery:
    """One recovery pass over a home (``root``): every dangling intent, latest first."""

    def __init__(self, ctx: LoopContext, *, root: Path, tools: ToolRegistry, gateway: Gateway,
                 commit: Commit, settlement: Settlement) -> None:
        self.ctx = ctx
        self.root = root
        self.tools = tools
        self.gateway = gateway
        self.commit = commit
        self.settlement = settlement

    def run(self) -> RecoveryReport:
        # cheap when there is nothing to do: one indexed query, no lock
        if not self.ctx.journal.dangling_intents():
            return RecoveryReport()
        with self.ctx.journal.exclusive("recovery"):
            return self._pass()

    def _pass(self) -> RecoveryReport:
        found = self.ctx.journal.dangling_intents()  # again, under the lock
        report = RecoveryReport(dangling=len(found))
        # latest first: a compensation started by an earlier action settles before it
        for _seq, action_id in reversed(found):
            report.items.append(self._one(action_id))
        return report

    def _load(self, action_id: str) -> _Dangling:
        events = self.ctx.journal.events_for_subject(action_id)
        attempts = [e for e in events if e.kind in ("action.intent", "action.retry")]
        intent, last = attempts[0], attempts[-1]
        decision_id = intent.payload["decision_id"]
        made = next(e for e in self.ctx.journal.events_for_subject(decision_id)
                    if e.kind == "decision.made")
        received = [e for e in self.ctx.journal.events_for_subject(made.payload["proposal_id"])
                    if e.kind == "proposal.received" and e.run_id == intent.run_id
                    and e.seq < intent.seq and "submission" not in e.payload]
        return _Dangling(
            intent=intent, last_attempt=last, attempts=len(attempts),
            after=[e for e in events if e.seq > last.seq],
            action=Action.model_validate(intent.payload["action"]),
            proposal=Proposal.model_validate(received[-1].payload["proposal"]),
            decision=RuntimeDecision.model_validate(made.payload["decision"]),
            last=events[-1].seq)

    def _item(self, d: _Dangling, result: str, outcome: Outcome | None,
              detail: str) -> Reconciliation:
        return Reconciliation(action_id=d.action.id, run_id=d.intent.run_id,
                              tool=d.action.action_type,
                              idempotency_key=d.action.idempotency_key, result=result,
                              outcome=str(outcome.status) if outcome else None, detail=detail)

    def _one(self, action_id: str) -> Reconciliation:
        d = self._load(action_id)
        try:
            return self._reconcile(d)
        except SubjectMoved:
            return self._item(d, "in_flight", None,
                              "the action moved on while it was reconciled (its worker, "
                              "found without its lease, wrote about it): left to it")
        except Superseded as lost:  # this pass's own lease was lost, or the action moved
            return self._item(d, "in_flight", None, lost.why)

    def _reconcile(self, d: _Dangling) -> Reconciliation:
        worker = str(d.last_attempt.payload.get("worker") or "")
        if worker and (worker == self.ctx.lease.id or self.ctx.journal.worker_alive(worker)):
            return self._item(d, "in_flight", None, f"worker `{worker}` is alive")
        if not self.tools.has(d.action.action_type):
            return self._item(d, "deferred", None,
                              f"tool `{d.action.action_type}` is not registered here")
        spec = self.tools.get(d.action.action_type)
        compensation = _last(d.after, "compensation.requested")
        if compensation is not None:
            out = self.settlement.compensate(
                Proposal.model_validate(compensation.payload["proposal"]),
                Outcome.model_validate(compensation.payload["outcome"]), d.action,
                last=d.last)
            return self._item(d, "compensation_resumed", out,
                              "the verification had failed; compensation resumed")
        observed = _last(d.after, "action.observed")
        if observed is not None:
            result = _recorded_result(spec, observed, started=d.last_attempt, last=d.last)
            return self._verify(d, spec, result, "reconciled",
                                "the call had returned: its journaled observation verified")
        made_by = d.intent.payload.get("tool")
        if isinstance(made_by, str) and made_by != spec.ref:
            # INVARIANT: whether an effect happened is asked of the version that made it;
            # another one's class, lookup or read knows nothing of it (test_439)
            return self._human(d, "reconcile_tool_changed",
                               f"the intent was made by `{made_by}`, and the tool is now "
                               f"`{spec.ref}`: whether the effect happened is unknown, and it "
                               "is never replayed by another version")
        return self._ask(d, spec)

    def _ask(self, d: _Dangling, spec: ToolSpec) -> Reconciliation:
        none = spec.idempotency is IdempotencyClass.NONE
        if spec.side_effect_class is SideEffectClass.READ_ONLY:
            # a read changes nothing: reading again cannot duplicate an effect
            return self._retry(d, spec, self._call(d, spec), "a read-only call: read again")
        if not self.tools.has_lookup(spec.id):
            code = "reconcile_idempotency_none" if none else "reconcile_no_lookup"
            return self._human(d, code, f"tool `{spec.ref}` has no lookup: whether the effect "
                               "happened is unknown, and it is never replayed by itself")
        call = self._call(d, spec)
        try:
            found = self.gateway.reconcile(spec=spec, action=d.action, call=call,
                                           run_id=d.intent.run_id, after=d.last)
        except Superseded:
            raise
        except Exception as exc:  # INVARIANT: a lookup that fails proves nothing
            return self._human(d, "reconcile_lookup_failed",
                               f"the lookup of `{spec.ref}` raised {type(exc).__name__}: {exc}")
        if found is not None:
            return self._verify(d, spec, found, "reconciled",
                                "the lookup found the effect of the key; verified")
        if none:
            return self._human(d, "reconcile_idempotency_none",
                               f"the lookup has no trace of the key, but `{spec.ref}` is of "
                               "idempotency class `none`: it is never replayed by itself")
        return self._retry(d, spec, call,
                           "the lookup had no trace of the key: called again with the same key")

    def _retry(self, d: _Dangling, spec: ToolSpec, call: ToolCall, why: str) -> Reconciliation:
        retry = NewEvent(
            run_id=d.intent.run_id, kind="action.retry", subject=d.action.id,
            actor=RECOVERY_ACTOR, at=self.ctx.clock(),
            payload={"idempotency_key": d.action.idempotency_key, "attempt": d.attempts,
                     "reason": "reconciliation: " + why, "worker": self.ctx.lease.id,
                     "idempotency": str(spec.idempotency)})
        result = self.gateway.retry(spec=spec, action=d.action, call=call, retry=retry,
                                    after=d.last)
        return self._verify(d, spec, result, "retried", why)

    def _call(self, d: _Dangling, spec: ToolSpec) -> ToolCall:
        return ToolCall(tool_id=spec.id, target=d.action.target,
                        arguments=spec.parse_arguments(d.action.arguments),
                        idempotency_key=d.action.idempotency_key,
                        environment=d.action.environment, dry_run=d.proposal.action.dry_run,
                        run_id=d.intent.run_id, actor=d.proposal.agent_id)

    def _verify(self, d: _Dangling, spec: ToolSpec, result: GatewayResult, kind: str,
                detail: str) -> Reconciliation:
        crashpoint("before_verification")
        out = self.commit.verify_and_commit(d.proposal, spec, d.decision, d.action,
                                            spec.parse_arguments(d.action.arguments), result,
                                            reconciled=detail)
        return self._item(d, kind, out, detail)

    def _human(self, d: _Dangling, code: str, reason: str) -> Reconciliation:
        now = self.ctx.clock()
        task = human_task_event(
            run_id=d.intent.run_id, subject=d.action.id, code=code, reason=reason,
            actor=RECOVERY_ACTOR, at=now,
            details={"action_id": d.action.id, "proposal_id": d.proposal.id,
                     "idempotency_key": d.action.idempotency_key,
                     "tool": d.intent.payload.get("tool"), "intent_seq": d.intent.seq})
        outcome = Outcome(run_id=d.intent.run_id, proposal_id=d.proposal.id,
                          status=OutcomeStatus.ESCALATED, decision=d.decision, action=d.action,
                          reasons=(f"escalated: human task `{task.payload['task_id']}`: "
                                   f"{reason}",))
        self.ctx.append_fenced([task, outcome_event(outcome, d.action.id, reconciled=True,
                                                    at=now)], subject=d.action.id, last=d.last)
        return self._item(d, "human_task", outcome, reason)


def _last(events: list[AuditEvent], kind: str) -> AuditEvent | None:
    matching = [e for e in events if e.kind == kind]
    return matching[-1] if matching else None


def _recorded_result(spec: ToolSpec, observed: AuditEvent, *, started: AuditEvent,
                     last: int) -> GatewayResult:
    """The gateway's result, rebuilt from the observation journaled before the crash."""
    observation = ExecutionObservation.model_validate(observed.payload["observation"])
    output = None
    error = observation.error
    if error is None:
        try:
            output = spec.parse_output(observation.output)
        except (ValueError, TypeError) as exc:
            error = f"output of `{spec.ref}` breaks its contract: {exc}"
    return GatewayResult(observation, output, error, started.at,
                         raised=bool(observation.error and observation.refusal is None
                                     and " raised " in observation.error),
                         last_seq=last,
                         # the runtime's retry of an attempt that raised: a refusal it
                         # answered is not the key's word (tests/security/test_593);
                         # recovery's own retry follows a lookup that found no trace
                         after_raised=started.kind == "action.retry"
                         and started.actor != RECOVERY_ACTOR)


__all__ = ["Reconciliation", "Recovery", "RecoveryReport"]
