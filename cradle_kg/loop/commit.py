"""Gate 2 to the transition: verify what happened, then commit or abort, never guess.

Gate 2 reads the target back through the tool's independent verifier; the
:class:`VerificationResult` and the :class:`StateTransition` it leads to are built here.
A verified transition is checked once more against the commit hooks — the integrity rules
on the run's graph — before it commits: a hook that finds a problem, or that cannot run,
aborts it (fail closed). Settlement then commits, compensates or escalates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from ..canonical import content_hash, iso
from ..crashpoints import crashpoint
from ..graph.project import recorded_fact_key
from ..records import (
    RUNTIME_ACTOR,
    Action,
    FactCheck,
    Outcome,
    OutcomeStatus,
    Proposal,
    Provenance,
    RuntimeDecision,
    StateTransition,
    VerificationCheck,
    VerificationResult,
    VerificationStatus,
)
from ..storage import NewEvent
from ..tools import ToolSpec, relayed_refusal
from ..verifiers import VerifierReport
from .context import LoopContext
from .gate2 import Gate2
from .gateway import GatewayResult
from .outcomes import VERIFICATION_STATUS, Dumped
from .settlement import Settlement

#: called with (run_id, events about to commit); returns reasons to abort, if any
CommitHook = Callable[[str, Sequence[NewEvent]], Sequence[str]]


def report_record(report: VerifierReport | None) -> dict[str, Any] | None:
    """A verifier's raw report as journaled (read by :mod:`cradle_kg.workflow.sandbox`)."""
    if report is None:
        return None
    out: dict[str, Any] = {"checks": [c.model_dump(mode="json") for c in report.checks],
                           "read_at": iso(report.read_at), "source": report.source}
    if report.changed is not None:  # absent when not observed: older journals read the same
        out["changed"] = list(report.changed)
    if report.facts:
        out["facts"] = [f.model_dump(mode="json") for f in report.facts]
    return out


def _fact_payload(proposal: Proposal, checks: Sequence[FactCheck],
                  evidence_refs: Sequence[str]) -> dict[str, Any]:
    """The facts this verification settles (issue 14): each candidate fact's graph key, its
    new status and the evidence it rests on. Absent when none: older journals read alike."""
    if not checks:
        return {}
    run_id = proposal.effective_run_id
    return {"proposal_id": proposal.id, "facts": [
        {"fact": recorded_fact_key(run_id, proposal.id, proposal.attempt, c.fact),
         "status": c.status, "detail": c.detail,
         "evidence_refs": list(evidence_refs)} for c in checks]}


def transition_event(run_id: str, transition: StateTransition, action: Action) -> NewEvent:
    kind = "transition.committed" if transition.committed_at else "transition.aborted"
    at = transition.committed_at or transition.aborted_at
    assert at is not None  # INVARIANT: a transition is either committed or aborted
    return NewEvent(run_id=run_id, kind=kind, subject=transition.id, actor=RUNTIME_ACTOR,
                    at=at, payload={"transition": transition.model_dump(mode="json"),
                                    "action_id": action.id})


class Commit:
    def __init__(self, ctx: LoopContext, *, gate2: Gate2, hooks: Sequence[CommitHook],
                 settlement: Settlement) -> None:
        self.ctx = ctx
        self.gate2 = gate2
        #: checked, in order, before a verified transition commits
        self.hooks = hooks
        self.settlement = settlement

    def verify_and_commit(self, proposal: Proposal, spec: ToolSpec, decision: RuntimeDecision,
                          action: Action, arguments: BaseModel, result: GatewayResult, *,
                          reconciled: str | None = None, found: str | None = None,
                          dumped: Sequence[Dumped] = ()) -> Outcome:
        """Gate 2, the commit check, then settlement. ``dumped``: records journaled before
        this commit with their dumps, for the outcome's payload (:func:`.outcomes.outcome_body`)."""
        run_id = proposal.effective_run_id
        # determinism seam: one clock reading, journaled as `verified_at` — every reading
        # the runtime takes lands in the journal, which is what strict replay feeds back
        verified_at = self.ctx.clock()
        g2 = self.gate2.run(spec=spec, action=action, arguments=arguments,
                            observation=result.observation, output=result.output,
                            output_error=result.output_error, started_at=result.started_at,
                            now=verified_at, facts=proposal.facts)
        evidence_refs: tuple[str, ...] = ()
        if g2.report is not None and g2.report.evidence:
            evidence_refs = (content_hash(g2.report.evidence),)
        verification = VerificationResult(
            id="ver:" + action.id.removeprefix("act:"), execution_id=action.id,
            status=g2.status, checks=g2.checks, evidence_refs=evidence_refs,
            verifier_id=g2.verifier_id, verified_at=verified_at,
            provenance=Provenance(source=g2.report.source if g2.report else "gate2",
                                  actor=RUNTIME_ACTOR, timestamp=verified_at,
                                  tool_ref=spec.ref, output_hash=result.observation.output_hash,
                                  evidence_refs=evidence_refs,
                                  verification_status=str(g2.status)),
        )
        verified = verification.model_dump(mode="json")
        events = [NewEvent(run_id=run_id, kind="verification.recorded", subject=verification.id,
                           actor=RUNTIME_ACTOR, at=verified_at,
                           payload={"verification": verified,
                                    "action_id": action.id,
                                    "transition_id": "st:" + action.id.removeprefix("act:"),
                                    "evidence": g2.report.evidence if g2.report else {},
                                    # determinism seam: the verifier is an activity; its raw
                                    # answer is journaled whole so strict replay can serve it
                                    "verifier_report": report_record(g2.report),
                                    **_fact_payload(proposal, g2.fact_checks, evidence_refs)})]
        reasons: list[str] = [f"{c.name}: {c.detail}" for c in g2.checks
                              if c.status is not VerificationStatus.VERIFIED]
        commit = g2.status is VerificationStatus.VERIFIED and result.output_error is None
        transition = StateTransition(
            id="st:" + action.id.removeprefix("act:"), resource_ref=action.target,
            to_state=result.observation.output_hash, decision_id=decision.id,
            verification_id=verification.id,
            committed_at=verified_at if commit else None,
            aborted_at=None if commit else verified_at,
            reason=None if commit else "; ".join(reasons) or "not verified",
        )
        status = (VERIFICATION_STATUS[g2.status] if result.output_error is None
                  else OutcomeStatus.FAILED)
        # one event object from the check to the commit: the integrity checker keeps the
        # projection it checked for the events it sees written (see `integrity._adopt`)
        settled = transition_event(run_id, transition, action)
        if commit:
            problems = self.problems(run_id, [*events, settled])
            if problems:
                transition = transition.model_copy(update={
                    "committed_at": None, "aborted_at": verified_at,
                    "reason": "integrity check failed: " + "; ".join(problems)})
                settled = transition_event(run_id, transition, action)
                reasons.extend(problems)
                status = OutcomeStatus.FAILED
        refused = self._refused(spec, result, g2.report, g2.checks, reasons)
        if reconciled:
            reasons.append("reconciled after a crash: " + reconciled)
        if found:  # a call that raised, whose effect its lookup found (Execution._asked)
            reasons.append(found)
        outcome = Outcome(run_id=run_id, proposal_id=proposal.id, status=status,
                          decision=decision, action=action, observation=result.observation,
                          verification=verification, transition=transition,
                          reasons=tuple(reasons))
        # the records this commit journals already, dumped once for the outcome's payload too
        known: list[Dumped] = [*dumped, ("verification", verification, verified),
                               ("transition", transition, settled.payload["transition"])]
        if result.observation_json is not None:
            known.append(("observation", result.observation, result.observation_json))
        crashpoint("before_commit")
        return self.settlement.settle(proposal, spec, action, outcome, [*events, settled],
                                      reconciled=reconciled is not None,
                                      last=result.last_seq, dumped=known, refused=refused)

    @staticmethod
    def _refused(spec: ToolSpec, result: GatewayResult, report: VerifierReport | None,
                 checks: Sequence[VerificationCheck], reasons: list[str]) -> bool:
        """Whether the call ends as the tool's refusal (:class:`~cradle_kg.errors.ToolRefused`):
        ``failed``, final for its key, no human task, no compensation. Its reason is put
        first in ``reasons``.

        INVARIANT: a refusal is the tool's word that it wrote nothing, and gate 2 still
        reads the target back: when the independent read finds the effect of the key done
        (the resource exists in the expected state), or observed any change of the call
        (``VerifierReport.changed``: a write in another state), the refusal is not
        honoured — the call is an unknown outcome, a human task, as for any exception
        (``tests/security/test_560``, ``test_576``). A write the read cannot see is the
        tool author's promise (documented with ``ToolRefused``). A refusal on a retry, after
        an attempt that raised, is not honoured either (``test_593``)."""
        code = result.observation.refusal
        if code is None:
            return False
        said = relayed_refusal(checks)  # masked as gate 2 masks it (test_573)
        if result.after_raised:
            # INVARIANT: a refusal on a retry speaks for that call, not for the attempt
            # before it, which raised: the key's effect is unknown (tests/security/test_593)
            reasons.insert(0, f"`{spec.ref}` refused `{code}` ({said}) on a retry, after an "
                              "attempt whose outcome is unknown: not honoured as a refusal "
                              "(that attempt may have written)")
            return False
        found = report is not None and all(
            c.status is VerificationStatus.VERIFIED for c in checks
            if c.name in ("resource_exists", "expected_state"))
        # a read that saw a change of the call (another state than intended: a partial
        # write) contradicts "nothing written" as much (tests/security/test_576)
        changed = tuple(report.changed or ()) if report is not None else ()
        if found or changed:
            seen = ("found the effect of the key" if found else
                    f"observed {len(changed)} resource(s) changed (named by "
                    "`no_forbidden_side_effect`)")
            reasons.insert(0, f"`{spec.ref}` refused `{code}` ({said}), but the independent "
                              f"read {seen}: not honoured as a refusal")
            return False
        reasons.insert(0, f"refused `{code}` by `{spec.ref}`: {said} (nothing written; "
                          "final for this idempotency key)")
        return True

    def problems(self, run_id: str, events: Sequence[NewEvent]) -> list[str]:
        """What the commit hooks find wrong with committing ``events`` (after what this
        thread's :meth:`.context.LoopContext.one_transaction` block holds back, if any)."""
        problems: list[str] = []
        held = self.ctx.held
        if held:
            events = [*held, *events]
        for hook in self.hooks:
            try:
                problems.extend(hook(run_id, events))
            except Exception as exc:  # INVARIANT: a check that cannot run blocks the commit
                problems.append(f"integrity check raised {type(exc).__name__}: {exc}")
        return problems
