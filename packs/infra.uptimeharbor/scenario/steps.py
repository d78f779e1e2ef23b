"""The steps of §12, each a separate callable returning a step dict.

A step dict always has ``step`` (its name) and ``outcome``, one of: ``observed``,
``proposed``, ``accepted``, ``refused``, ``executed``, ``verified``, ``failed``,
``inconclusive``, ``resolved``, ``escalated``. Refusals carry ``violations`` (reason
codes) and/or the policy decision. The core team drives the same steps through the
governed runtime; here the gates are called directly, in the order Gate 1 would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cradle_kg.packs.sdk import ApprovalError

from ..gitutil import git
from ..harbor import (
    Harbor,
    acquire_fix_lock,
    open_incident,
    previous_verified_commit,
    record_verification,
    release_fix_lock,
    set_incident_status,
    staging_resolution,
)
from ..policy import ApprovalCallback, Principal, authorize, request_approval
from ..service.repo_fixture import RepoFixture, build_repo
from ..tools import ops
from ..validators.rules import validate
from ..verifiers.checks import deployed_commit_matches, incident_resolved, service_healthy

Step = dict[str, Any]

#: the agent of the scenario: may ask for production deploys, never approve them
AGENT = Principal("Agent", "harbor-fixer", ("production-deployers",))


def _refused(step: str, **detail: Any) -> Step:
    return {"step": step, "outcome": "refused", **detail}


def _verify(
    h: Harbor, name: str, verdict: tuple[str, dict[str, Any]], env: str, commit: str | None,
    incident_id: str | None,
) -> dict[str, Any]:
    status, detail = verdict
    rec = record_verification(h, verifier=name, status=status, detail=detail, env=env,
                              commit=commit, incident_id=incident_id)
    return {"verifier": name, "status": status, "id": rec["id"], "reason": detail.get("reason")}


def setup(home: Path) -> tuple[Harbor, RepoFixture, Step]:
    """The world before the agent: production ran ``good`` (verified), then ``outage``."""
    fixture = build_repo(home / "repo")
    h = Harbor(home / "harbor", fixture.path)
    try:
        for env in ("staging", "production"):
            h.envs.switch(env, fixture["good"], key=f"bootstrap-{env}")
            _verify(h, "service_healthy", service_healthy(h, env), env, fixture["good"], None)
        h.envs.switch("production", fixture["outage"], key="release-outage")
    except BaseException:
        h.envs.stop_all()
        raise
    return h, fixture, {"step": "setup", "outcome": "executed", "commits": fixture.commits}


def step_detect_outage(h: Harbor, env: str = "production") -> tuple[Step, dict[str, Any] | None]:
    """Monitoring: probe ``env``; an outage opens an incident around the failing probe."""
    seen = ops.detect_outage(h, env)
    if not seen["outage"]:
        return {"step": "detect_outage", "outcome": "observed", "outage": False}, None
    incident = open_incident(h, env, seen)
    return {"step": "detect_outage", "outcome": "observed", "outage": True,
            "incident_id": incident["id"], "status_code": seen["status_code"],
            "reason": seen["reason"]}, incident


def step_diagnose(h: Harbor, incident: dict[str, Any]) -> Step:
    """The agent's diagnosis — a proposal: what changed since the last verified commit."""
    state = h.snapshot()
    env = str(incident["env"])
    failing = str(incident["failing_commit"])
    last_good = previous_verified_commit(state, env)
    changed = git(h.repo, "diff", "--name-only", f"{last_good}..{failing}").split() if last_good \
        else []
    return {"step": "diagnose", "outcome": "proposed", "incident_id": incident["id"],
            "failing_commit": failing, "last_verified_commit": last_good,
            "suspect_files": changed,
            "symptom": incident["original_probe"]["observation"].get("reason")}


def step_propose_fix(h: Harbor, incident: dict[str, Any], commit: str, fix_id: str) -> Step:
    """Gate 1 on a fix proposal, then the incident's fix lock (one fix in flight)."""
    sha = h.envs.resolve(commit)
    action = {"kind": "propose_fix", "actor": AGENT.id, "incident_id": incident["id"],
              "fix_id": fix_id, "commit": sha}
    violations = validate(action, h.snapshot())
    if violations:
        return _refused("propose_fix", fix_id=fix_id, commit=sha,
                        violations=[v.code for v in violations])
    if not acquire_fix_lock(h, str(incident["id"]), fix_id, sha):
        return _refused("propose_fix", fix_id=fix_id, commit=sha,
                        violations=["incident_fix_in_flight"])
    return {"step": "propose_fix", "outcome": "accepted", "fix_id": fix_id, "commit": sha}


def step_run_tests(h: Harbor, commit: str) -> Step:
    """Tests in an isolated checkout: an observation, never a verification."""
    obs = ops.run_tests(h, commit)
    return {"step": "run_tests", "outcome": "observed", "commit": obs["commit"],
            "tests": obs["outcome"], "observation": obs}


def step_deploy_staging(
    h: Harbor, incident: dict[str, Any], fix_id: str, commit: str, key: str
) -> Step:
    sha = h.envs.resolve(commit)
    action = {"kind": "deploy", "actor": AGENT.id, "env": "staging", "commit": sha,
              "incident_id": incident["id"], "fix_id": fix_id, "evidence": []}
    decision = authorize(AGENT, "deploy", "staging",
                         {"commit": sha, "incident_id": str(incident["id"]),
                          "staging_verified": False})
    if not decision.allowed:
        return _refused("deploy_staging", policy=decision.to_dict())
    violations = validate(action, h.snapshot())
    if violations:
        return _refused("deploy_staging", violations=[v.code for v in violations])
    result = ops.deploy(h, "staging", sha, key)
    return {"step": "deploy_staging", "outcome": "executed", "commit": sha,
            "policy": decision.to_dict(), "tool_result": result}


def step_verify_staging(h: Harbor, incident: dict[str, Any], commit: str) -> Step:
    """Independent: the incident's original failing probe, replayed against staging."""
    sha = h.envs.resolve(commit)
    iid = str(incident["id"])
    checks = [
        _verify(h, "deployed_commit_matches", deployed_commit_matches(h, "staging", sha),
                "staging", sha, iid),
        _verify(h, "incident_resolved", incident_resolved(h, incident, "staging"),
                "staging", sha, iid),
    ]
    return {"step": "verify_staging", "outcome": _overall(checks), "commit": sha,
            "checks": checks}


def _overall(checks: list[dict[str, Any]]) -> str:
    statuses = {c["status"] for c in checks}
    if statuses == {"verified"}:
        return "verified"
    return "failed" if "failed" in statuses else "inconclusive"


def step_abandon_fix(h: Harbor, incident: dict[str, Any], fix_id: str, reason: str) -> Step:
    released = release_fix_lock(h, str(incident["id"]), fix_id)
    return {"step": "abandon_fix", "outcome": "executed", "fix_id": fix_id,
            "released": released, "reason": reason}


def step_deploy_production(
    h: Harbor, incident: dict[str, Any], fix_id: str, commit: str, key: str,
    approve: ApprovalCallback, principal: Principal = AGENT,
) -> Step:
    """Policy (Cedar) + approval hook + the flow validators, then the keyed deploy."""
    sha = h.envs.resolve(commit)
    iid = str(incident["id"])
    state = h.snapshot()
    proof = staging_resolution(state, sha, iid)
    decision = authorize(principal, "deploy", "production",
                         {"commit": sha, "incident_id": iid, "staging_verified": proof is not None})
    action: dict[str, Any] = {
        "kind": "deploy", "actor": principal.id, "env": "production", "commit": sha,
        "incident_id": iid, "fix_id": fix_id,
        "evidence": [{"kind": "verification", "ref": proof["id"]}] if proof else [],
    }
    if not decision.allowed:
        return _refused("deploy_production", policy=decision.to_dict(),
                        violations=[v.code for v in validate(action, state)])
    approval: dict[str, Any] | None = None
    if decision.requires_approval:
        try:
            approval = request_approval(action, decision, approve)
        except ApprovalError as exc:
            return _refused("deploy_production", policy=decision.to_dict(),
                            violations=["production_approval_missing"], reason=exc.message)
    action["authorization"] = {**decision.to_dict(), "approval": approval}
    violations = validate(action, state)
    if violations:
        return _refused("deploy_production", policy=decision.to_dict(),
                        violations=[v.code for v in violations])
    result = ops.deploy(h, "production", sha, key)
    return {"step": "deploy_production", "outcome": "executed", "commit": sha,
            "policy": decision.to_dict(), "approval": approval, "tool_result": result}


def step_verify_production(h: Harbor, incident: dict[str, Any], commit: str) -> Step:
    """Post-deploy: commit, health and the original incident, all from the probe and git."""
    sha = h.envs.resolve(commit)
    iid = str(incident["id"])
    checks = [
        _verify(h, "deployed_commit_matches", deployed_commit_matches(h, "production", sha),
                "production", sha, iid),
        _verify(h, "service_healthy", service_healthy(h, "production"), "production", sha, iid),
        _verify(h, "incident_resolved", incident_resolved(h, incident, "production"),
                "production", sha, iid),
    ]
    return {"step": "verify_production", "outcome": _overall(checks), "commit": sha,
            "checks": checks}


def step_rollback(h: Harbor, incident: dict[str, Any], fix_id: str, key: str) -> Step:
    """Compensation after a failed post-deploy check; the incident is escalated."""
    action = {"kind": "rollback", "actor": AGENT.id, "env": "production",
              "incident_id": incident["id"], "fix_id": fix_id}
    violations = validate(action, h.snapshot())
    if violations:
        return _refused("rollback", violations=[v.code for v in violations])
    result = ops.rollback(h, "production", key)
    target = str(result["commit"])
    checks = [
        _verify(h, "deployed_commit_matches", deployed_commit_matches(h, "production", target),
                "production", target, None),
        _verify(h, "service_healthy", service_healthy(h, "production"), "production", target,
                None),
    ]
    release_fix_lock(h, str(incident["id"]), fix_id)
    set_incident_status(h, str(incident["id"]), "escalated",
                        reason="post-deploy verification failed; rolled back")
    return {"step": "rollback", "outcome": "escalated", "rolled_back_to": target,
            "tool_result": result, "checks": checks, "verification": _overall(checks)}


def step_resolve_incident(
    h: Harbor, incident: dict[str, Any], fix_id: str, evidence: list[dict[str, Any]]
) -> Step:
    """Close the incident — only on a verified production ``incident_resolved``."""
    action = {"kind": "resolve_incident", "actor": AGENT.id, "incident_id": incident["id"],
              "fix_id": fix_id, "evidence": evidence}
    violations = validate(action, h.snapshot())
    if violations:
        return _refused("resolve_incident", violations=[v.code for v in violations])
    set_incident_status(h, str(incident["id"]), "resolved", fix_id=fix_id)
    release_fix_lock(h, str(incident["id"]), fix_id)
    return {"step": "resolve_incident", "outcome": "resolved", "incident_id": incident["id"]}
