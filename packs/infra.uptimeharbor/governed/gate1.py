"""Gate-1 validators: the pack's flow rules over (proposal, state snapshot)."""

from __future__ import annotations

from typing import Any

from cradle_kg.packs.sdk import Finding, PackContext, Proposal, ToolSpec, Validator, validator

from ..harbor import staging_resolution
from ..validators import rules
from .worlds import harbor_of

KINDS = {"infra.claim_fix": "propose_fix", "infra.deploy": "deploy",
          "infra.rollback": "rollback", "infra.resolve_incident": "resolve_incident"}


def rule_action(proposal: Proposal) -> dict[str, Any]:
    """The pack rules' view of a proposal (``validators/rules.py`` docstring)."""
    args = dict(proposal.action.arguments)
    evidence = list(args.get("evidence") or [])
    if args.get("staging_verification"):
        evidence.append({"kind": "verification", "ref": args["staging_verification"]})
    return {"kind": KINDS.get(proposal.action.action_type, proposal.action.action_type),
            "actor": proposal.agent_id, "env": args.get("env"), "commit": args.get("commit"),
            "incident_id": args.get("incident_id"), "fix_id": args.get("fix_id"),
            "evidence": evidence}


def _rule(name: str, rule: rules.Validator) -> Validator:
    """A flow rule as a gate-1 validator; the rules judge changes — reads (probes, tests)
    have nothing to break."""
    def check_rule(ctx: PackContext, proposal: Proposal, spec: ToolSpec) -> list[Finding]:
        if proposal.action.action_type not in KINDS:
            return []
        state = harbor_of(ctx, proposal.action.target).snapshot()
        return [Finding(code=v.code, message=f"{v.code}: {v.message}")
                for v in rule(rule_action(proposal), state)]
    return validator("infra.*", name=name)(check_rule)


well_formed_change = _rule("infra.well-formed-change", rules.well_formed_change)
one_fix_per_incident = _rule("infra.one-fix-per-incident", rules.one_fix_per_incident)
green_tests_not_resolution = _rule("infra.green-tests-not-resolution",
                                   rules.green_tests_not_resolution)
production_runs_verified_commits_only = _rule("infra.production-runs-verified-commits-only",
                                              rules.production_runs_verified_commits_only)


@validator("infra.deploy", name="infra.cited-staging-verification")
def cited_staging_verification(ctx: PackContext, proposal: Proposal,
                               spec: ToolSpec) -> list[Finding]:
    """A production deploy cites *the* recorded staging resolution of its commit."""
    args = proposal.action.arguments
    if args.get("env") != "production" or not args.get("staging_verification"):
        return []
    state = harbor_of(ctx, proposal.action.target).snapshot()
    proof = staging_resolution(state, str(args.get("commit")), str(args.get("incident_id")))
    if proof is not None and proof["id"] == args["staging_verification"]:
        return []
    return [Finding(code="staging_verification_mismatch",
                    message="staging_verification_mismatch: `"
                            f"{args['staging_verification']}` is not the recorded, verified "
                            "staging resolution of this commit for this incident")]


