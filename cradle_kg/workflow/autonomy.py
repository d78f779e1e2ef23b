"""Progressive autonomy for human steps: observation → proposal → shadow → promotion.

Every stage change is an event in the run ``autonomy:<workflow>/<step>``; the stage is a
projection of them, and the history is the ``human.decided`` events of that step.

1. **observation** — the step is human; decisions accumulate.
2. **proposal** — past ``min_sample`` decisions (default 30) :meth:`AutonomyBook.propose`
   learns a readable rule (:mod:`.rules`) and journals it with its reproduction rate on
   the history, mismatches included. Below the sample nothing is proposed.
3. **shadow** — the step stays blocking; each request shows what the rule would decide,
   and agreement on fresh decisions is measured.
4. **promotion** — governed by the step's versioned :class:`AutonomyPolicy` (default:
   ≥ 95 % agreement on ≥ 20 fresh decisions and a named admin's approval — an admin who
   may answer the step themselves: :meth:`AutonomyBook.answer_refusals`).

A promoted rule decides only inside its coverage; outside it the human step reopens with
the reason. ``halt`` (the kill switch) makes the step blocking again at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import CradleError
from ..loop.approvals import ApprovalBook, excluded_for_agent
from ..records import AuditEvent
from ..storage import Journal, NewEvent, SubjectMoved
from .definitions import load_recorded_workflow
from .errors import AutonomyError
from .rules import Rule, Sample, learn, reproduction
from .steps import HumanStep

Append = Callable[[Sequence[NewEvent]], list[AuditEvent]]


class Stage(StrEnum):
    OBSERVATION = "observation"
    PROPOSAL = "proposal"
    SHADOW = "shadow"
    PROMOTED = "promoted"
    HALTED = "halted"


class AutonomyPolicy(BaseModel):
    """The versioned promotion policy of one step."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str = "default-1"
    min_sample: int = Field(default=30, ge=1)
    min_agreement: float = Field(default=0.95, gt=0, le=1)
    min_fresh: int = Field(default=20, ge=1)
    #: approvers allowed to promote must have this role (or the scope ``autonomy``)
    admin_role: str = "admin"


@dataclass
class AutonomyState:
    workflow: str
    step: str
    stage: Stage = Stage.OBSERVATION
    policy: AutonomyPolicy = field(default_factory=AutonomyPolicy)
    rule: Rule | None = None
    proposal: dict[str, Any] = field(default_factory=dict)
    shadow_since: int = 0
    halted: str | None = None
    #: who promoted the rule and the scopes they held then (None: a promotion journaled
    #: before they were recorded)
    promoted_by: str | None = None
    promoted_scopes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Routing:
    """What a human step does with one input."""

    automate: bool
    stage: Stage
    decision: str | None = None
    suggestion: str | None = None
    rule_version: str | None = None
    reasons: tuple[str, ...] = ()


def autonomy_run(workflow: str, step: str) -> str:
    return f"autonomy:{workflow}/{step}"


def step_subject(workflow: str, step: str) -> str:
    """What a step's autonomy events are about."""
    return f"step:{workflow}/{step}"


#: how many times a promotion is decided when the step's events change under it
PROMOTE_TRIES = 3
#: the events a step's autonomy stage is folded from (:meth:`AutonomyBook.state`)
STAGE_KINDS = ("autonomy.policy", "autonomy.proposed", "autonomy.shadow", "autonomy.promoted",
               "autonomy.halted")


class AutonomyBook:
    def __init__(self, journal: Journal, approvals: ApprovalBook, *, append: Append,
                 clock: Callable[[], datetime]) -> None:
        self.journal = journal
        self.approvals = approvals
        self._append = append
        self._clock = clock

    # --- reading -----------------------------------------------------------------

    def state(self, workflow: str, step: str) -> AutonomyState:
        """The step's stage, from its own autonomy events: those of :data:`STAGE_KINDS`
        about ``step:<workflow>/<step>`` in its autonomy run — read each time a run of the
        workflow reaches the step. Before, every event of the autonomy run was read, and an
        agent could write there (its proposals, in a run of that name): each routing then
        decoded one row per event it wrote (``tests/security/test_94``)."""
        st = AutonomyState(workflow, step)
        for ev in self.journal.events_for_subject(step_subject(workflow, step),
                                                  run_id=autonomy_run(workflow, step),
                                                  kinds=STAGE_KINDS):
            p = ev.payload
            if ev.kind == "autonomy.policy":
                st.policy = AutonomyPolicy.model_validate(p["policy"])
            elif ev.kind == "autonomy.proposed":
                st.stage, st.rule, st.proposal = Stage.PROPOSAL, Rule.model_validate(
                    p["rule"]), p
            elif ev.kind == "autonomy.shadow":
                st.stage, st.shadow_since = Stage.SHADOW, ev.seq
            elif ev.kind == "autonomy.promoted":
                st.stage, st.halted, st.promoted_by = Stage.PROMOTED, None, ev.actor
                scopes = p.get("admin_scopes")
                st.promoted_scopes = tuple(map(str, scopes)) if isinstance(scopes, list) else None
            elif ev.kind == "autonomy.halted":
                st.stage, st.halted, st.shadow_since = Stage.HALTED, p["reason"], ev.seq
        return st

    def history(self, workflow: str, step: str) -> list[tuple[AuditEvent, Sample]]:
        out: list[tuple[AuditEvent, Sample]] = []
        for ev in self.journal.events_of_kind("human.decided"):
            p = ev.payload
            if p.get("workflow") == workflow and p.get("step") == step:
                fields = {k: p["context"].get(k) for k in p.get("rule_fields", ())}
                out.append((ev, (fields, str(p["decision"][p["decision_field"]]))))
        return out

    def agreement(self, st: AutonomyState) -> tuple[int, int]:
        """(fresh decisions since shadow began, how many the rule agreed with)."""
        if st.rule is None:
            return 0, 0
        fresh = agreed = 0
        for ev, (inputs, label) in self.history(st.workflow, st.step):
            if ev.seq > st.shadow_since and ev.payload.get("rule_version") == st.rule.version:
                fresh += 1
                agreed += st.rule.decide(inputs) == label
        return fresh, agreed

    def route(self, workflow: str, step: str, inputs: Mapping[str, Any], *,
              asked: HumanStep | None = None, agent: str | None = None) -> Routing:
        """What the step does with ``inputs``; ``asked``: the step as this run asks it, and
        ``agent``: the run's workflow agent — a promoted rule answers it only while its
        promoter may answer it so (see :meth:`_rescoped`)."""
        st = self.state(workflow, step)
        if st.rule is None or st.stage in (Stage.OBSERVATION, Stage.PROPOSAL):
            return Routing(False, st.stage)
        version, suggestion = st.rule.version, st.rule.decide(inputs)
        if st.stage is not Stage.PROMOTED:
            reason = (f"halted: {st.halted}",) if st.halted else ()
            return Routing(False, st.stage, suggestion=suggestion, rule_version=version,
                           reasons=reason)
        outside = st.rule.outside(inputs) or self._rescoped(st, asked, agent)
        if outside:
            return Routing(False, st.stage, suggestion=suggestion, rule_version=version,
                           reasons=tuple(outside))
        return Routing(True, st.stage, decision=suggestion, rule_version=version)

    def _rescoped(self, st: AutonomyState, asked: HumanStep | None,
                  agent: str | None) -> list[str]:
        """Why a promoted rule may not answer the step as ``asked`` now, in a run of
        ``agent``: its promoter's scopes, recorded at promotion, do not reach it, or its
        promoter is the agent or the one it acts for. INVARIANT: the rule answers only what
        its promoter may answer — a workflow file edited since to ask the step within
        another scope (``tests/security/test_340``), or to run it for an agent acting for
        the promoter (``test_409``), gets a person again (before, the rule answered it)."""
        out = []
        if asked is not None and st.promoted_scopes is not None:
            why = asked.scope_refusal(st.promoted_scopes)
            if why is not None:
                out.append(f"promoted by `{st.promoted_by}`, who may not answer the step as "
                           f"it is asked now: {why}; promote again")
        if agent is not None and st.promoted_by is not None \
                and st.promoted_by in excluded_for_agent(self.approvals.config, agent):
            out.append(f"promoted by `{st.promoted_by}`, who is `{agent}` or the one it acts "
                       "for and may not answer its steps")
        return out

    # --- commands ----------------------------------------------------------------

    def _event(self, workflow: str, step: str, kind: str, by: str,
               payload: dict[str, Any], *, if_last: int | None = None) -> AuditEvent:
        return self._append([NewEvent(
            run_id=autonomy_run(workflow, step), kind=kind, subject=step_subject(workflow, step),
            actor=by, at=self._clock(), payload={"workflow": workflow, "step": step, **payload},
            if_last=if_last)])[0]

    def set_policy(self, workflow: str, step: str, policy: AutonomyPolicy, *, by: str) -> None:
        self._event(workflow, step, "autonomy.policy", by, {"policy": policy.model_dump()})

    def propose(self, workflow: str, step: str, *, by: str) -> dict[str, Any] | None:
        """Learn and journal a rule; ``None`` (and nothing journaled) below the sample."""
        st = self.state(workflow, step)
        history = self.history(workflow, step)
        if len(history) < st.policy.min_sample:
            return None
        last = history[-1][0].payload
        samples = [s for _, s in history]
        rule = learn(samples, fields=tuple(last.get("rule_fields", ())),
                     decision_field=str(last["decision_field"]))
        rate, misses = reproduction(rule, samples)
        payload = {
            "rule": rule.model_dump(mode="json"), "rule_version": rule.version,
            "readable": rule.render(), "sample_size": len(samples),
            "reproduction_rate": round(rate, 6), "policy_version": st.policy.version,
            "mismatches": [{"event": history[i][0].id, "run_id": history[i][0].run_id,
                            "inputs": dict(samples[i][0]), "human": samples[i][1],
                            "rule": rule.decide(samples[i][0])} for i in misses],
        }
        self._event(workflow, step, "autonomy.proposed", by, payload)
        return payload

    def shadow(self, workflow: str, step: str, *, by: str) -> None:
        st = self.state(workflow, step)
        if st.rule is None:
            raise AutonomyError(f"step `{workflow}/{step}` has no proposed rule",
                                reasons=("propose a rule first",))
        self._event(workflow, step, "autonomy.shadow", by, {"rule_version": st.rule.version})

    def promote(self, workflow: str, step: str, *, admin: str, token: str) -> dict[str, Any]:
        """Hand the step's decisions to its rule in shadow, when ``admin`` may and the rule
        has earned it. INVARIANT: written only over the step's events it was decided on
        (``if_last``): a halt, a new rule or policy journaled meanwhile by another admin
        has it decided again on what is there now — before, the promotion was written over
        them and a kill switch that landed meanwhile was undone (``tests/security/test_510``)."""
        self.approvals.authenticate(admin, token)
        for _ in range(PROMOTE_TRIES):
            try:
                return self._promote(workflow, step, admin)
            except SubjectMoved:  # nothing written: decided again on what is there now
                continue
        raise AutonomyError(f"cannot promote `{workflow}/{step}`: its autonomy events kept "
                            "changing while it was decided; read its status, promote again",
                            reasons=("the step changed meanwhile",))

    def _promote(self, workflow: str, step: str, admin: str) -> dict[str, Any]:
        seen = self.journal.subject_last(step_subject(workflow, step))  # before the reads
        st = self.state(workflow, step)
        approver = self.approvals.approver(admin)
        reasons: list[str] = []
        if approver is None or (approver.role != st.policy.admin_role
                                and "autonomy" not in approver.scopes):
            reasons.append(f"`{admin}` is not an autonomy admin (role `{st.policy.admin_role}`)")
        # INVARIANT: the rule answers in place of people: promoted only by one who may
        # answer the step (before, an admin of any scope did: tests/security/test_339)
        reasons += self.answer_refusals(workflow, step, admin)
        if st.stage is not Stage.SHADOW or st.rule is None:
            reasons.append(f"the step is in `{st.stage}`, promotion needs `shadow`")
        fresh, agreed = self.agreement(st)
        rate = agreed / fresh if fresh else 0.0
        if fresh < st.policy.min_fresh:
            reasons.append(f"{fresh} fresh decisions, the policy needs {st.policy.min_fresh}")
        if rate < st.policy.min_agreement:
            reasons.append(f"agreement {rate:.1%}, the policy needs {st.policy.min_agreement:.0%}")
        if reasons:
            raise AutonomyError(f"cannot promote `{workflow}/{step}`: " + "; ".join(reasons),
                                reasons=tuple(reasons))
        assert st.rule is not None
        assert approver is not None
        payload = {"rule_version": st.rule.version, "admin": admin,
                   "admin_scopes": list(approver.scopes), "fresh": fresh,
                   "agreed": agreed, "agreement": round(rate, 6),
                   "policy": st.policy.model_dump(),
                   "coverage": {k: v.model_dump() for k, v in st.rule.coverage.items()}}
        self._event(workflow, step, "autonomy.promoted", admin, payload, if_last=seen)
        return payload

    def answer_refusals(self, workflow: str, step: str, person: str) -> list[str]:
        """Why ``person`` may not answer the human step ``workflow/step`` as the runs of its
        history define it, as an answer to it is refused (``runner.decide``): its scope
        (:meth:`HumanStep.scope_refusal`), the workflow's agent and the one it acts for.
        A run whose workflow no longer reads (its file changed or went), or no run at all,
        defines a step of no known scope: for an approver holding ``*`` (fail closed).
        One row read per run of the history, one definition loaded per distinct one."""
        approver = self.approvals.approver(person)
        if approver is None:
            return [f"`{person}` is not a configured approver"]
        found: dict[str, None] = {}
        definitions: set[tuple[str, str]] = set()
        for run_id in dict.fromkeys(ev.run_id for ev, _ in self.history(workflow, step)):
            first = next(iter(self.journal.events(run_id=run_id, batch=1)), None)
            p = first.payload if first is not None and first.kind == "workflow.started" else {}
            definitions.add((str(p.get("definition", "")), str(p.get("version", ""))))
        for definition, version in sorted(definitions or {("", "")}):
            try:
                wf = load_recorded_workflow(definition, version=version)
                asked = wf.step(step)
            except CradleError:
                wf, asked = None, None
            if wf is None or not isinstance(asked, HumanStep):
                why = (None if "*" in approver.scopes else "its workflow as a run of it "
                       "recorded it no longer reads: only an approver holding `*` answers it")
            else:
                why = asked.scope_refusal(approver.scopes)
                if person in excluded_for_agent(self.approvals.config, wf.agent):
                    found[f"`{person}` is `{wf.agent}` or the one it acts for, and may not "
                          "answer its steps"] = None
            if why is not None:
                found[f"`{person}` may not answer step `{workflow}/{step}`: {why}"] = None
        return list(found)

    def halt(self, workflow: str, step: str, *, by: str, reason: str) -> None:
        """The kill switch: the step is blocking again from the next input on."""
        self._event(workflow, step, "autonomy.halted", by, {"reason": reason})
