"""infra.uptimeharbor's example identities and example runner (``pack run``, the demo).

The pack's tools, verifiers and validators are declarations in ``governed/``, named by the
manifest and registered when the pack loads. Here: the identities the examples use, the
§12 scenario through the governed loop (``scenario``), and ``run_example(runtime, input)``
(the manifest's ``example_runner``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cradle_kg import Runtime
from cradle_kg.packs.sdk import (
    Agent,
    ApprovalStatus,
    Approver,
    CheckStatus,
    Outcome,
    OutcomeStatus,
    Permission,
    RuntimeConfig,
    token_hash,
)

from .governed.gate1 import KINDS
from .governed.worlds import harbor_for, target, world_dir
from .harbor import Harbor, open_incident, set_incident_status, staging_resolution
from .scenario import steps
from .service.envs import ENVIRONMENTS
from .state import atomic_write_json

#: example identities: the fixer may ask for production deploys, never approve them; a
#: second agent holds only the staging role; a monitor probes; an on-call human approves
FIXER = "agent:harbor-fixer"
FIXER_STAGING_ONLY = "agent:harbor-fixer-2"
MONITOR = "agent:harbor-monitor"
RELEASE_MANAGER = "user:release-manager"
ON_CALL = "user:sre-on-call"
EXAMPLE_TOKENS = {ON_CALL: "example-token-sre-on-call"}


# --- identities (example and demo only; a real home configures its own) -------------------

def identities() -> RuntimeConfig:
    envs = ("local", "staging", "production")
    return RuntimeConfig(
        agents=(
            Agent(id=FIXER, role="production-deployer", acts_for=RELEASE_MANAGER,
                  environments=envs, permitted_scopes=("infra:read", "infra:deploy")),
            Agent(id=FIXER_STAGING_ONLY, role="sre-agent", acts_for=RELEASE_MANAGER,
                  environments=envs, permitted_scopes=("infra:read", "infra:deploy")),
            Agent(id=MONITOR, role="monitor", environments=("staging", "production"),
                  permitted_scopes=("infra:read",)),
        ),
        permissions=(
            Permission(subject=FIXER, action_type="infra.*", resource_selector="harbor:*"),
            Permission(subject=FIXER_STAGING_ONLY, action_type="infra.*",
                       resource_selector="harbor:*"),
            Permission(subject=MONITOR, action_type="infra.detect_outage",
                       resource_selector="harbor:*"),
        ),
        approvers=(Approver(id=ON_CALL, role="sre-on-call", scopes=("production_deployment",),
                            token_hash=token_hash(EXAMPLE_TOKENS[ON_CALL])),),
        # approvals come from the pack's Cedar (`production-deploy-explicit`), so that a
        # compensating rollback in production is not held back waiting for a human
        approval_environments=(),
    )


def merged(base: RuntimeConfig, extra: RuntimeConfig) -> RuntimeConfig:
    """``base`` plus the pack's identities; the pack's approval environments replace the
    base's (production approvals come from its Cedar policy, not from the environment)."""
    return base.merged_with(extra).model_copy(
        update={"approval_environments": extra.approval_environments})


def ensure_identities(runtime: Runtime) -> None:
    if runtime.config.agent(FIXER) is None:
        runtime.configure(merged(runtime.config, identities()))


# --- the example runner ------------------------------------------------------------------

Step = dict[str, Any]


class _Flow:
    """One governed run of §12 in a world: each step a proposal, each answer recorded."""

    def __init__(self, runtime: Runtime, world: str) -> None:
        self.rt = runtime
        self.world = world
        self.h = harbor_for(Path(runtime.home.root), world)
        self.steps: list[Step] = []
        self.n = 0
        #: tag -> sha of the world's repository (for readable results)
        self.commits: dict[str, str] = {}

    def submit(self, name: str, expect: str, agent: str, tool: str, thing: str,
               arguments: dict[str, Any], environment: str, note: str = "") -> Outcome:
        self.n += 1
        task = f"uh-{self.world}"
        action: dict[str, Any] = {"action_type": tool, "target": target(self.world, thing),
                                  "arguments": arguments, "environment": environment}
        if tool == "infra.deploy" and environment == "production":
            action["risk_level"] = "high"  # a production change: integrity rule 2 applies
        outcome = self.rt.submit({
            "id": f"{task}-{self.n:02d}-{name}", "task_id": task, "agent_id": agent,
            "step": self.n,
            **({"on_behalf_of": RELEASE_MANAGER} if agent != MONITOR else {}),
            "action": action})
        self.record(name, expect, outcome, note)
        return outcome

    def record(self, name: str, expect: str, outcome: Outcome, note: str = "") -> None:
        d = outcome.decision
        stopped = next((c.check for c in d.checks if c.status is CheckStatus.FAIL), None) \
            if d else None
        self.steps.append({
            "step": name, "expected": expect, "outcome": str(outcome.status),
            "ok": str(outcome.status) == expect, "proposal_id": outcome.proposal_id,
            "decision_id": d.id if d else None, "stopped_at": stopped,
            "codes": sorted({r.split(":", 1)[0] for r in outcome.reasons if ":" in r
                             and r.split(":", 1)[0].isidentifier()}),
            "policy_ids": [p.policy_id for p in d.policy_results] if d else [],
            "pack_versions": list(d.pack_versions) if d else [],
            "verification": str(outcome.verification.status) if outcome.verification
            else None,
            "approval_id": outcome.approval.id if outcome.approval else None,
            "reasons": list(outcome.reasons), "note": note,
            "outcome_record": outcome,
        })

    def approve(self, name: str, waiting: Outcome, expect: str, *,
                decision: ApprovalStatus = ApprovalStatus.APPROVED, note: str = "") -> Outcome:
        if waiting.approval is None:
            raise RuntimeError(f"step `{name}`: nothing awaits an approval")
        approval, resumed = self.rt.decide_approval(
            waiting.approval.id, approver_id=ON_CALL, token=EXAMPLE_TOKENS[ON_CALL],
            status=decision, reason=None if decision is ApprovalStatus.APPROVED
            else "not during the freeze")
        if resumed is None:
            resumed = waiting.model_copy(update={
                "status": OutcomeStatus.DENIED if decision is ApprovalStatus.REJECTED
                else OutcomeStatus.REPAIR, "approval": approval,
                "reasons": (f"{decision} by `{ON_CALL}`: {approval.reason}",)})
        self.record(name, expect, resumed, note)
        return resumed


def _incident_from(flow: _Flow, detected: Outcome) -> dict[str, Any] | None:
    """Monitoring opens the incident from the *observation* (its failing probe)."""
    if detected.observation is None or not detected.observation.output.get("outage"):
        return None
    seen = detected.observation.output
    return open_incident(flow.h, str(seen["env"]), seen)


def _deploy(flow: _Flow, name: str, expect: str, incident: Mapping[str, Any], fix_id: str,
            commit: str, env: str, *, agent: str = FIXER, cite: bool = True,
            note: str = "") -> Outcome:
    args: dict[str, Any] = {"env": env, "commit": commit, "incident_id": incident["id"],
                            "fix_id": fix_id}
    if env == "production" and cite:
        proof = staging_resolution(flow.h.snapshot(), commit, str(incident["id"]))
        if proof is not None:
            args["staging_verification"] = proof["id"]
    return flow.submit(name, expect, agent, "infra.deploy", env, args, env, note)


def scenario(runtime: Runtime, *, variant: str = "success", world: str | None = None,
             approve: bool = True, keep_running: bool = False) -> dict[str, Any]:
    """§12 through the governed loop. ``variant``: ``success`` or ``staging_only_fix``."""
    if variant not in ("success", "staging_only_fix"):
        raise ValueError(f"unknown scenario variant `{variant}`")
    ensure_identities(runtime)
    world = world or f"{variant}-{uuid.uuid4().hex[:8]}"
    base = world_dir(Path(runtime.home.root), world)
    h, fx, _ = steps.setup(base)  # the world before the agent (not an agent action)
    flow = _Flow(runtime, world)
    flow.commits = dict(fx.commits)
    try:
        detected = flow.submit("outage detected", "executed", MONITOR, "infra.detect_outage",
                               "production", {"env": "production"}, "production",
                               "a probe observation: /health and / fail")
        incident = _incident_from(flow, detected)
        if incident is None:
            raise RuntimeError("no outage was observed")
        iid = str(incident["id"])
        if variant == "success":
            first = fx["green_not_fixed"]
            flow.submit("claim fix-1", "executed", FIXER, "infra.claim_fix", f"incident/{iid}",
                        {"incident_id": iid, "fix_id": "fix-1", "commit": first}, "local")
            flow.submit("tests of fix-1", "executed", FIXER, "infra.run_tests", "repo",
                        {"commit": first}, "local", "green: an observation, not a resolution")
            flow.submit("resolve on green tests", "denied", FIXER, "infra.resolve_incident",
                        f"incident/{iid}", {"incident_id": iid, "fix_id": "fix-1", "evidence": [
                            {"kind": "test_observation", "ref": "tests-of-fix-1"}]},
                        "production", "green tests ≠ incident resolved")
            _deploy(flow, "staging deploy of fix-1", "verification_failed", incident, "fix-1",
                    first, "staging", note="the incident's probe still fails: rolled back")
        fix = fx["fix"] if variant == "success" else fx["fix_staging_only"]
        flow.submit("claim fix-2", "executed", FIXER, "infra.claim_fix", f"incident/{iid}",
                    {"incident_id": iid, "fix_id": "fix-2", "commit": fix}, "local")
        flow.submit("concurrent fix-3", "denied", FIXER_STAGING_ONLY, "infra.claim_fix",
                    f"incident/{iid}", {"incident_id": iid, "fix_id": "fix-3",
                                        "commit": fx["fix"]}, "local",
                    "one incident, one fix in flight")
        flow.submit("tests of fix-2", "executed", FIXER, "infra.run_tests", "repo",
                    {"commit": fix}, "local")
        _deploy(flow, "staging deploy of fix-2", "executed", incident, "fix-2", fix, "staging",
                note="verified: commit, health, the incident's own probe")
        if variant == "success":
            _deploy(flow, "production, no staging proof", "denied", incident, "fix-2", fix,
                    "production", cite=False, note="production never runs an unverified commit")
            _deploy(flow, "production by staging role", "denied", incident, "fix-2", fix,
                    "production", agent=FIXER_STAGING_ONLY,
                    note="staging verification does not authorize production")
        waiting = _deploy(flow, "production deploy of fix-2", "awaiting_approval", incident,
                          "fix-2", fix, "production",
                          note="explicit permit `production-deploy-explicit` + approval")
        if not approve:
            flow.approve(f"rejected by {ON_CALL}", waiting, "denied",
                         decision=ApprovalStatus.REJECTED)
            return _result(flow, incident)
        expect = "executed" if variant == "success" else "verification_failed"
        done = flow.approve(f"approved by {ON_CALL}", waiting, expect,
                            note="post-deploy: independent probe" if variant == "success"
                            else "post-deploy check fails: compensated by infra.rollback")
        if variant == "success" and done.status is OutcomeStatus.EXECUTED:
            recorded = recorded_resolution(flow.h, "production", fix, iid)
            flow.submit("resolve incident", "executed", FIXER, "infra.resolve_incident",
                        f"incident/{iid}", {"incident_id": iid, "fix_id": "fix-2", "evidence": [
                            {"kind": "verification", "ref": recorded or "none"}]},
                        "production", "the original failing probe passes in production")
        elif done.status is not OutcomeStatus.EXECUTED:
            set_incident_status(flow.h, iid, "escalated",
                                reason="the fix failed its post-deploy verification")
        return _result(flow, incident)
    finally:
        if not keep_running:
            h.envs.stop_all()


def recorded_resolution(h: Harbor, env: str, commit: str, incident_id: str) -> str | None:
    found = [v for v in h.snapshot()["verifications"]
             if v.get("env") == env and v.get("commit") == commit
             and v.get("verifier") == "incident_resolved" and v.get("incident_id") == incident_id
             and v.get("status") == "verified"]
    return str(found[-1]["id"]) if found else None


def _result(flow: _Flow, incident: Mapping[str, Any]) -> dict[str, Any]:
    state = flow.h.snapshot()
    final = state["incidents"].get(incident["id"], {})
    prod = state["envs"].get("production", {})
    tags = {sha: tag for tag, sha in flow.commits.items()}
    return {"world": flow.world, "incident_id": incident["id"],
            "incident_status": final.get("status"),
            "production_commit": tags.get(str(prod.get("commit")), prod.get("commit")),
            "ok": all(s["ok"] for s in flow.steps),
            "steps": flow.steps}


def _validator_example(runtime: Runtime, example: Mapping[str, Any]) -> dict[str, Any]:
    """A rule example's action, proposed through the gates against the example's state."""
    ensure_identities(runtime)
    world = f"{example.get('name', 'example')}-{uuid.uuid4().hex[:8]}"
    h = harbor_for(Path(runtime.home.root), world)
    atomic_write_json(h.store.path, dict(example["state"]))
    action = dict(example["action"])
    kind = action["kind"]
    tool = {v: k for k, v in KINDS.items()}[kind]
    authorized = (action.get("authorization") or {}).get("decision") == "allow"
    # the governed runtime decides authorization itself: an action the example did not
    # authorize is proposed by an identity without the production role
    agent = FIXER if (authorized or kind != "deploy" or action.get("env") != "production") \
        and action.get("actor") == "harbor-fixer" else FIXER_STAGING_ONLY
    args: dict[str, Any]
    if kind == "propose_fix":
        args = {"incident_id": action["incident_id"], "fix_id": action["fix_id"],
                "commit": action["commit"]}
        thing, env = f"incident/{action['incident_id']}", "local"
    elif kind == "resolve_incident":
        args = {"incident_id": action["incident_id"], "fix_id": action["fix_id"],
                "evidence": action.get("evidence") or []}
        env = str(example["state"]["incidents"][action["incident_id"]]["env"])
        thing = f"incident/{action['incident_id']}"
    else:
        args = {"env": action["env"], "commit": action.get("commit"),
                "incident_id": action.get("incident_id"), "fix_id": action.get("fix_id")}
        proofs = [e["ref"] for e in action.get("evidence") or [] if e["kind"] == "verification"]
        if proofs:
            args["staging_verification"] = proofs[0]
        args = {k: v for k, v in args.items() if v is not None}
        thing, env = str(action["env"]), str(action["env"])
    flow = _Flow(runtime, world)
    flow.submit(str(example.get("name", kind)), "", agent, tool, thing, args, env)
    step = flow.steps[0]
    step.pop("expected")
    step.pop("ok")
    step.pop("outcome_record")
    return {"world": world, **step}


def _live_example(runtime: Runtime, example: Mapping[str, Any]) -> dict[str, Any]:
    """A live example: the incident, a fix deployed (via staging to production), verified."""
    ensure_identities(runtime)
    world = f"{example.get('name', 'live')}-{uuid.uuid4().hex[:8]}"
    h, fx, _ = steps.setup(world_dir(Path(runtime.home.root), world))
    flow = _Flow(runtime, world)
    flow.commits = dict(fx.commits)
    try:
        detected = flow.submit("outage detected", "executed", MONITOR, "infra.detect_outage",
                               "production", {"env": "production"}, "production")
        incident = _incident_from(flow, detected)
        if incident is None:
            raise RuntimeError("no outage was observed")
        iid = str(incident["id"])
        commit = fx[example["deploy"]["commit"]]
        expect = {"verified": "executed", "failed": "verification_failed"}[
            example["expect"]["status"]]
        flow.submit("claim fix", "executed", FIXER, "infra.claim_fix", f"incident/{iid}",
                    {"incident_id": iid, "fix_id": "fix-1", "commit": commit}, "local")
        tests = flow.submit("tests", "executed", FIXER, "infra.run_tests", "repo",
                            {"commit": commit}, "local")
        target_env = example["deploy"]["env"]
        staged = _deploy(flow, "staging deploy", expect if target_env == "staging"
                         else "executed", incident, "fix-1", commit, "staging")
        if target_env == "production" and staged.status is OutcomeStatus.EXECUTED:
            waiting = _deploy(flow, "production deploy", "awaiting_approval", incident,
                              "fix-1", commit, "production")
            flow.approve("approved", waiting, expect)
        out = _result(flow, incident)
        out["tests"] = tests.observation.output.get("outcome") if tests.observation else None
        return out
    finally:
        h.envs.stop_all()


def run_example(runtime: Runtime, payload: Mapping[str, Any]) -> dict[str, Any]:
    """``pack run`` entry: a rule example (``kind: validator``), a live one (``live``), or
    the whole scenario (``kind: scenario``, ``variant``, ``approve``). The answer says
    whether it is what the example's ``expect`` says (``as_expected``: what ``pack test``
    holds it to)."""
    kind = payload.get("kind", "scenario")
    if kind == "validator":
        out = _jsonable(_validator_example(runtime, payload))
    elif kind == "live":
        out = _jsonable(_live_example(runtime, payload))
    elif kind == "scenario":
        out = _jsonable(scenario(runtime, variant=str(payload.get("variant", "success")),
                                 approve=bool(payload.get("approve", True))))
    else:
        raise ValueError(f"unknown example kind `{kind}`")
    expect = payload.get("expect")
    if isinstance(expect, Mapping):
        out["as_expected"] = as_expected(kind, out, expect)
    return out


def as_expected(kind: str, out: Mapping[str, Any], expect: Mapping[str, Any]) -> bool:
    """A rule example: the governed outcome and the gate-1 check that stopped it (and, at
    the pack's rules, each violation the example names among the decision's codes); a
    live example: every step as planned, the tests and the last step's verification; a
    scenario: every step as planned, the incident and production where they should end."""
    if kind == "validator":
        if "outcome" not in expect:
            return False  # the rules' violations alone say nothing of the governed loop
        stopped = expect.get("stopped_at")
        violations = set(expect.get("violations") or ())
        return (out.get("outcome") == expect["outcome"] and out.get("stopped_at") == stopped
                and (stopped != "domain_preconditions"
                     or violations <= set(out.get("codes") or ())))
    if not out.get("ok"):
        return False
    if kind == "live":
        steps = out.get("steps") or [{}]
        return (out.get("tests") == expect.get("tests")
                and steps[-1].get("verification") == expect.get("status"))
    return (out.get("incident_status") == expect.get("incident_status")
            and out.get("production_commit") == expect.get("production_commit"))


def _jsonable(result: dict[str, Any]) -> dict[str, Any]:
    for step in result.get("steps", []):
        step.pop("outcome_record", None)
    out: dict[str, Any] = json.loads(json.dumps(result, default=str))
    return out


__all__ = ["ENVIRONMENTS", "as_expected", "run_example", "scenario"]
