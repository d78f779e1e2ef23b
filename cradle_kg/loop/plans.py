"""Plans: ordered proposals with dependencies, each step through both gates.

Steps run in a topological order of ``depends_on`` and ``ordering_constraints`` (ties
keep the plan's own order). When a step does not end ``executed`` — denied, waiting for
approval, failed verification — the plan's abort policy decides what becomes of the rest:

* ``abort_remaining``: nothing after it runs;
* ``skip_dependents``: the steps that depend on it (transitively) are skipped;
* ``continue``: every step whose dependencies executed still runs.

A step never runs before all of its dependencies executed and verified.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import InputError
from ..records import (
    RUNTIME_ACTOR,
    AbortPolicy,
    Outcome,
    OutcomeStatus,
    Plan,
    PlanStep,
    Proposal,
)
from ..storage import NewEvent
from .context import LoopContext


@dataclass
class PlanOutcome:
    plan_id: str
    run_id: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def status(self) -> str:
        if self.skipped or any(not o.ok for o in self.outcomes.values()):
            return "incomplete"
        return "executed"


def ordered_steps(plan: Plan) -> list[PlanStep]:
    by_id = {s.proposal.id: s for s in plan.steps}
    if len(by_id) != len(plan.steps):
        raise InputError(f"plan `{plan.id}`: two steps share one proposal id")
    after: dict[str, set[str]] = {pid: set(s.depends_on) for pid, s in by_id.items()}
    for first, second in plan.ordering_constraints:
        after.setdefault(second, set()).add(first)
    unknown = {d for deps in after.values() for d in deps} - set(by_id)
    unknown |= set(after) - set(by_id)
    if unknown:
        raise InputError(f"plan `{plan.id}`: unknown step(s) " +
                         ", ".join(f"`{u}`" for u in sorted(unknown)))
    done: list[str] = []
    remaining = [s.proposal.id for s in plan.steps]
    while remaining:
        ready = next((pid for pid in remaining if after[pid] <= set(done)), None)
        if ready is None:
            raise InputError(f"plan `{plan.id}`: the dependencies form a cycle among " +
                             ", ".join(f"`{r}`" for r in remaining))
        done.append(ready)
        remaining.remove(ready)
    return [by_id[pid] for pid in done]


def run_plan(ctx: LoopContext, plan: Plan, *,
             submit: Callable[[Proposal], Outcome]) -> PlanOutcome:
    """Run ``plan`` step by step, each step submitted through the whole loop."""
    steps = ordered_steps(plan)
    run_id = f"run:plan:{plan.id}"
    if "/" in plan.id:  # INVARIANT: refused before anything is journaled (test_259)
        raise InputError(f"plan `{plan.id}`: a plan's id holds no `/`: its run "
                         f"`{run_id}` would be in the namespace of `plan:…`, where no "
                         "agent proposes", hint="name the plan without a `/`")
    result = PlanOutcome(plan.id, run_id)
    ctx.append([NewEvent(run_id=run_id, kind="plan.started", subject=plan.id,
                         actor=RUNTIME_ACTOR, at=ctx.clock(),
                         payload={"plan": plan.model_dump(mode="json")})])
    stopped: str | None = None
    for step in steps:
        pid = step.proposal.id
        if stopped is not None:
            result.skipped[pid] = f"aborted: step `{stopped}` did not execute"
            continue
        blocked = [d for d in step.depends_on
                   if d in result.skipped or (d in result.outcomes and not result.outcomes[d].ok)]
        if blocked:
            result.skipped[pid] = "skipped: depends on " + ", ".join(f"`{b}`" for b in blocked)
            continue
        proposal = step.proposal
        if proposal.run_id is None:
            proposal = proposal.model_copy(update={"run_id": run_id})
        outcome = submit(proposal)
        result.outcomes[pid] = outcome
        if outcome.status is not OutcomeStatus.EXECUTED and (
                plan.abort_policy is AbortPolicy.ABORT_REMAINING):
            stopped = pid
    ctx.append([NewEvent(run_id=run_id, kind="plan.finished", subject=plan.id,
                         actor=RUNTIME_ACTOR, at=ctx.clock(),
                         payload={"status": result.status,
                                  "outcomes": {k: str(v.status)
                                               for k, v in result.outcomes.items()},
                                  "skipped": result.skipped})])
    return result
