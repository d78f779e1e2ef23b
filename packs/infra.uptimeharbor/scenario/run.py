"""``run_scenario``: the whole of §12 scripted end to end, on real processes.

Variant ``success``:
    setup → outage detected in production → diagnosis → fix #1 (green tests, no fix)
    → tests pass (observation) → staging deploy → staging verification FAILS
    (green tests ≠ incident resolved) → fix #1 abandoned → fix #2 → a concurrent fix #3
    is refused → tests → staging deploy → staging verification passes → an attempt to
    deploy to production without approval is refused → production deploy (policy +
    approval) → post-deploy verification → incident resolved.

Variant ``rollback``: fix #2 is ``fix_staging_only``: it passes staging, fails the
post-deploy verification in production → rollback to the last verified commit → the
incident is escalated.

Every environment is stopped before returning, unless ``keep_running``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ..harbor import get_incident
from ..policy import ApprovalCallback
from . import steps

Variant = Literal["success", "rollback"]


def refuse_all(request: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """An approval hook that never approves (the default: no auto-approval)."""
    return None


def run_scenario(
    home: Path,
    *,
    variant: Variant = "success",
    approve: ApprovalCallback = refuse_all,
    keep_running: bool = False,
) -> list[dict[str, Any]]:
    """Run the scenario under ``home`` and return its steps, in order."""
    out: list[dict[str, Any]] = []
    h, fx, first = steps.setup(home)
    out.append(first)
    try:
        detected, incident = steps.step_detect_outage(h, "production")
        out.append(detected)
        if incident is None:
            return out
        out.append(steps.step_diagnose(h, incident))

        # fix #1: makes the tests green without fixing anything
        out.append(steps.step_propose_fix(h, incident, fx["green_not_fixed"], "fix-1"))
        out.append(steps.step_run_tests(h, fx["green_not_fixed"]))
        out.append(steps.step_deploy_staging(h, incident, "fix-1", fx["green_not_fixed"],
                                             "deploy-staging-fix-1"))
        verdict = steps.step_verify_staging(h, incident, fx["green_not_fixed"])
        out.append(verdict)
        if verdict["outcome"] != "verified":
            out.append(steps.step_abandon_fix(h, incident, "fix-1", "staging verification "
                                              f"{verdict['outcome']}"))

        # fix #2: the real fix (or, in the rollback variant, one that only fixes staging)
        fix = fx["fix"] if variant == "success" else fx["fix_staging_only"]
        out.append(steps.step_propose_fix(h, incident, fix, "fix-2"))
        out.append(steps.step_propose_fix(h, incident, fx["fix"], "fix-3"))  # concurrent
        out.append(steps.step_run_tests(h, fix))
        out.append(steps.step_deploy_staging(h, incident, "fix-2", fix, "deploy-staging-fix-2"))
        verdict = steps.step_verify_staging(h, incident, fix)
        out.append(verdict)
        if verdict["outcome"] != "verified":
            out.append(steps.step_abandon_fix(h, incident, "fix-2", "staging failed"))
            return out

        out.append(steps.step_deploy_production(h, incident, "fix-2", fix,
                                                "deploy-production-fix-2", refuse_all))
        deployed = steps.step_deploy_production(h, incident, "fix-2", fix,
                                                "deploy-production-fix-2", approve)
        out.append(deployed)
        if deployed["outcome"] != "executed":
            return out
        post = steps.step_verify_production(h, incident, fix)
        out.append(post)
        if post["outcome"] == "verified":
            proof = [{"kind": "verification", "ref": c["id"]} for c in post["checks"]]
            out.append(steps.step_resolve_incident(h, incident, "fix-2", proof))
        else:
            out.append(steps.step_rollback(h, incident, "fix-2", "rollback-production-fix-2"))
        out.append({"step": "summary", "outcome": "executed",
                    "incident": get_incident(h, str(incident["id"])),
                    "production": h.store.env("production").get("commit")})
        return out
    finally:
        if not keep_running:
            h.envs.stop_all()
