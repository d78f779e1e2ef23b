"""The flow rules of §12 as closed-world validators over (proposed action, state snapshot).

Each validator is a pure function ``(action, state) -> list[Violation]``; an empty list
means "this rule has nothing against it". What a rule cannot find in the state counts
against the action (closed world): a verification that is not recorded did not happen.

A proposed action is a dict:

    {"kind": "propose_fix" | "deploy" | "rollback" | "resolve_incident",
     "actor": str, "env": str, "commit": str (40 hex), "incident_id": str, "fix_id": str,
     "evidence": [{"kind": "test_observation" | "verification", "ref": str, ...}],
     "authorization": {"decision": "allow" | "deny", "policy_ids": [...],
                       "requires_approval": bool, "approval": {...} | None}}

The state is the pack's state file (``state.StateStore.read()``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..gitutil import is_full_sha
from ..harbor import (
    lock_holds,
    previous_verified_commit,
    staging_resolution,
    verifications_for,
)

ACTION_KINDS = ("propose_fix", "deploy", "rollback", "resolve_incident")
ENVIRONMENTS = ("staging", "production")

Action = Mapping[str, Any]
StateView = Mapping[str, Any]


@dataclass(frozen=True)
class Violation:
    rule: str
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "code": self.code, "message": self.message}


Validator = Callable[[Action, StateView], list[Violation]]


def _incident(state: StateView, action: Action) -> Mapping[str, Any] | None:
    found = state.get("incidents", {}).get(action.get("incident_id"))
    return found if isinstance(found, Mapping) else None


def well_formed_change(action: Action, state: StateView) -> list[Violation]:
    """Known kind, known environment, a pinned commit, an incident that exists."""
    rule = "well_formed_change"
    kind = action.get("kind")
    if kind not in ACTION_KINDS:
        return [Violation(rule, "unknown_action_kind", f"unknown action kind `{kind}`")]
    out: list[Violation] = []
    if kind in ("deploy", "rollback") and action.get("env") not in ENVIRONMENTS:
        out.append(Violation(rule, "unknown_environment", f"unknown env `{action.get('env')}`"))
    if kind in ("deploy", "propose_fix") and not is_full_sha(str(action.get("commit", ""))):
        out.append(Violation(rule, "commit_not_pinned", "commit must be a full 40-hex sha"))
    needs_incident = kind in ("propose_fix", "resolve_incident") or action.get("incident_id")
    if needs_incident and _incident(state, action) is None:
        out.append(
            Violation(rule, "unknown_incident", f"unknown incident `{action.get('incident_id')}`")
        )
    return out


def one_fix_per_incident(action: Action, state: StateView) -> list[Violation]:
    """One incident never gets two concurrent fixes: the fix lock decides which one runs."""
    rule = "one_fix_per_incident"
    incident = _incident(state, action)
    if incident is None:
        return []
    lock = state.get("fix_locks", {}).get(incident.get("id"))
    fix_id = action.get("fix_id")
    kind = action.get("kind")
    out: list[Violation] = []
    if kind == "propose_fix":
        if incident.get("status") != "open":
            out.append(Violation(rule, "incident_not_open",
                                 f"incident `{incident.get('id')}` is {incident.get('status')}"))
        if lock is not None and lock.get("fix_id") != fix_id:
            out.append(Violation(rule, "incident_fix_in_flight",
                                 f"fix `{lock.get('fix_id')}` is already in flight for "
                                 f"incident `{incident.get('id')}`"))
    elif kind == "deploy" and (lock is None or lock.get("fix_id") != fix_id):
        out.append(Violation(rule, "fix_lock_not_held",
                             f"fix `{fix_id}` does not hold the lock of `{incident.get('id')}`"))
    elif kind == "resolve_incident":
        # the resolution names the fix that resolved it: the one holding the claim, and
        # once resolved, the resolver on record (tests/security/test_506)
        if incident.get("status") == "resolved" and incident.get("fix_id") != fix_id:
            out.append(Violation(rule, "incident_not_open",
                                 f"incident `{incident.get('id')}` was resolved by fix "
                                 f"`{incident.get('fix_id')}`"))
        elif lock is not None and lock.get("fix_id") != fix_id:
            out.append(Violation(rule, "fix_lock_not_held",
                                 f"fix `{fix_id}` does not hold the lock of "
                                 f"`{incident.get('id')}` (`{lock.get('fix_id')}` does)"))
    # the lock decides the commit too: under a fix runs the commit its claim names, not one
    # another agent brings by naming the holder's fix id (tests/security/test_435)
    if kind in ("propose_fix", "deploy") and lock is not None and lock.get("fix_id") == fix_id \
            and not lock_holds(lock, fix_id, action.get("commit")):
        out.append(Violation(rule, "fix_commit_mismatch",
                             f"fix `{fix_id}` of `{incident.get('id')}` is claimed for "
                             f"`{str(lock.get('commit'))[:12]}`, not "
                             f"`{str(action.get('commit'))[:12]}`"))
    return out


def green_tests_not_resolution(action: Action, state: StateView) -> list[Violation]:
    """Green tests are an observation: only the incident's own probe resolves it."""
    rule = "green_tests_not_resolution"
    kind = action.get("kind")
    evidence = list(action.get("evidence") or [])
    only_tests = bool(evidence) and all(e.get("kind") == "test_observation" for e in evidence)
    if kind == "resolve_incident":
        incident = _incident(state, action)
        if incident is None:
            return []
        env = str(incident.get("env"))
        running = state.get("envs", {}).get(env, {}).get("commit")
        proof = verifications_for(state, env=env, commit=str(running),
                                  verifier="incident_resolved", incident_id=incident.get("id"))
        if proof:
            return []
        if only_tests:
            return [Violation(rule, "green_tests_not_resolution",
                              "passing tests do not show the incident is resolved")]
        return [Violation(rule, "incident_resolution_unverified",
                          f"no verified incident_resolved for `{incident.get('id')}` "
                          f"in `{env}` at `{running}`")]
    if (
        kind == "deploy"
        and action.get("env") == "production"
        and only_tests
        and staging_resolution(state, str(action.get("commit")), str(action.get("incident_id")))
        is None
    ):
        return [Violation(rule, "green_tests_not_resolution",
                          "passing tests are not a staging verification of the fix")]
    return []


def staging_does_not_authorize_production(action: Action, state: StateView) -> list[Violation]:
    """A production deploy needs its own explicit policy decision (and approval if asked)."""
    rule = "staging_does_not_authorize_production"
    if action.get("kind") not in ("deploy",) or action.get("env") != "production":
        return []
    auth = action.get("authorization") or {}
    if auth.get("decision") != "allow":
        verified = staging_resolution(state, str(action.get("commit")),
                                      str(action.get("incident_id")))
        code = ("staging_verification_is_not_authorization" if verified
                else "production_policy_decision_missing")
        return [Violation(rule, code, "production deploy lacks an explicit policy permit")]
    approval = auth.get("approval") or {}
    if auth.get("requires_approval") and not approval.get("approved"):
        return [Violation(rule, "production_approval_missing",
                          "the permitting policy requires a human approval")]
    return []


def production_runs_verified_commits_only(action: Action, state: StateView) -> list[Violation]:
    """Production only receives a commit verified in staging for this incident."""
    rule = "production_runs_verified_commits_only"
    if action.get("env") != "production":
        return []
    if action.get("kind") == "rollback":
        if previous_verified_commit(state, "production") is None:
            return [Violation(rule, "no_verified_rollback_target",
                              "no previously verified commit to roll production back to")]
        return []
    if action.get("kind") != "deploy":
        return []
    commit = str(action.get("commit"))
    incident_id = str(action.get("incident_id"))
    if staging_resolution(state, commit, incident_id) is not None:
        return []
    other = verifications_for(state, env="staging", commit=commit, verifier="incident_resolved")
    if other:
        return [Violation(rule, "staging_verification_other_incident",
                          f"`{commit[:12]}` was verified in staging for another incident")]
    return [Violation(rule, "commit_unverified_in_staging",
                      f"`{commit[:12]}` has no verified staging resolution of `{incident_id}`")]


def production_invariant(state: StateView) -> list[Violation]:
    """The commit production runs now passed the post-deploy verification there."""
    commit = state.get("envs", {}).get("production", {}).get("commit")
    if commit and verifications_for(state, env="production", commit=str(commit),
                                    verifier="service_healthy"):
        return []
    return [Violation("production_runs_verified_commits_only",
                      "production_runs_unverified_commit",
                      f"production runs `{commit}` with no verified post-deploy check")]


VALIDATORS: dict[str, Validator] = {
    "well_formed_change": well_formed_change,
    "one_fix_per_incident": one_fix_per_incident,
    "green_tests_not_resolution": green_tests_not_resolution,
    "staging_does_not_authorize_production": staging_does_not_authorize_production,
    "production_runs_verified_commits_only": production_runs_verified_commits_only,
}


def validate(action: Action, state: StateView) -> list[Violation]:
    """Run every validator; the violations of all of them, in a stable order."""
    out: list[Violation] = []
    for check in VALIDATORS.values():
        out.extend(check(action, state))
    return out
