"""The §12 scenario end to end, on real git, real processes and real HTTP."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

PKG = "cradle_pack_infra_uptimeharbor"
run = importlib.import_module(f"{PKG}.scenario.run")
steps = importlib.import_module(f"{PKG}.scenario.steps")
rules = importlib.import_module(f"{PKG}.validators.rules")
state_mod = importlib.import_module(f"{PKG}.state")
checks = importlib.import_module(f"{PKG}.verifiers.checks")
ops = importlib.import_module(f"{PKG}.tools.ops")
harbor_mod = importlib.import_module(f"{PKG}.harbor")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LIVE_EXAMPLES = sorted(
    p for p in EXAMPLES.glob("*.json") if json.loads(p.read_text())["kind"] == "live"
)


def _by_step(out: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(s["step"], s["outcome"]) for s in out]


def test_success_variant(tmp_path: Path, approver: Any, service_pids: Any) -> None:
    out = run.run_scenario(tmp_path, variant="success", approve=approver)
    assert _by_step(out) == [
        ("setup", "executed"),
        ("detect_outage", "observed"),
        ("diagnose", "proposed"),
        ("propose_fix", "accepted"),          # fix-1: green tests, no fix
        ("run_tests", "observed"),
        ("deploy_staging", "executed"),
        ("verify_staging", "failed"),         # green tests != incident resolved
        ("abandon_fix", "executed"),
        ("propose_fix", "accepted"),          # fix-2: the real fix
        ("propose_fix", "refused"),           # fix-3: concurrent fix refused
        ("run_tests", "observed"),
        ("deploy_staging", "executed"),
        ("verify_staging", "verified"),
        ("deploy_production", "refused"),     # no approval: staging did not authorise it
        ("deploy_production", "executed"),
        ("verify_production", "verified"),
        ("resolve_incident", "resolved"),
        ("summary", "executed"),
    ]
    assert out[1]["outage"] is True and out[1]["status_code"] == 500
    assert out[2]["suspect_files"] == ["config.json"]
    assert out[4]["tests"] == "passed"  # ... and yet:
    assert out[6]["checks"][1] == {**out[6]["checks"][1], "verifier": "incident_resolved",
                                   "status": "failed"}
    assert out[9]["violations"] == ["incident_fix_in_flight"]
    assert out[13]["violations"] == ["production_approval_missing"]
    assert out[14]["approval"]["approver_id"] == "human:sre-on-call"
    assert out[14]["policy"]["policy_ids"] == ["production-deploy-explicit"]
    assert out[-1]["incident"]["status"] == "resolved"
    commits = out[0]["commits"]
    assert out[-1]["production"] == commits["fix"]
    state = state_mod.StateStore(tmp_path / "harbor").read()
    assert rules.production_invariant(state) == []
    assert state["fix_locks"] == {}
    assert service_pids(str(tmp_path)) == []  # stopped at the end


def test_rollback_variant(tmp_path: Path, approver: Any, service_pids: Any) -> None:
    out = run.run_scenario(tmp_path, variant="rollback", approve=approver)
    tail = _by_step(out)[-5:]
    assert tail == [
        ("deploy_production", "refused"),
        ("deploy_production", "executed"),
        ("verify_production", "failed"),
        ("rollback", "escalated"),
        ("summary", "executed"),
    ]
    commits = out[0]["commits"]
    rollback = out[-2]
    assert rollback["rolled_back_to"] == commits["good"]
    assert rollback["verification"] == "verified"
    assert out[-1]["incident"]["status"] == "escalated"
    assert out[-1]["production"] == commits["good"]
    state = state_mod.StateStore(tmp_path / "harbor").read()
    assert rules.production_invariant(state) == []  # production is back on a verified commit
    assert service_pids(str(tmp_path)) == []


def test_no_approval_means_no_production_deploy(tmp_path: Path) -> None:
    out = run.run_scenario(tmp_path, variant="success")  # default hook refuses everything
    assert _by_step(out)[-1] == ("deploy_production", "refused")
    state = state_mod.StateStore(tmp_path / "harbor").read()
    assert state["envs"]["production"]["commit"] == out[0]["commits"]["outage"]


def test_production_deploy_of_unverified_commit_is_refused(tmp_path: Path,
                                                           approver: Any) -> None:
    h, fx, _ = steps.setup(tmp_path)
    try:
        _, incident = steps.step_detect_outage(h, "production")
        assert steps.step_propose_fix(h, incident, fx["fix"], "fix-1")["outcome"] == "accepted"
        out = steps.step_deploy_production(h, incident, "fix-1", fx["fix"], "key-prod-x",
                                           approver)
        assert out["outcome"] == "refused"
        assert out["policy"]["policy_ids"] == ["production-never-unverified"]
        assert "commit_unverified_in_staging" in out["violations"]
        assert h.store.env("production")["commit"] == fx["outage"]
        assert ops.lookup(h, "key-prod-x")["found"] is False
        # closing the incident on green tests alone is refused as well
        tests = steps.step_run_tests(h, fx["fix"])
        closed = steps.step_resolve_incident(
            h, incident, "fix-1", [{"kind": "test_observation", "ref": tests["commit"]}])
        assert closed["violations"] == ["green_tests_not_resolution"]
    finally:
        h.envs.stop_all()


@pytest.mark.parametrize("path", LIVE_EXAMPLES, ids=lambda p: p.stem)
def test_live_examples(path: Path, harbor: Any, repo: Any) -> None:
    case = json.loads(path.read_text())
    harbor.envs.switch(case["incident"]["env"], repo[case["incident"]["commit"]])
    incident = harbor_mod.open_incident(harbor, case["incident"]["env"],
                                        ops.detect_outage(harbor, case["incident"]["env"]))
    commit = repo[case["deploy"]["commit"]]
    assert ops.run_tests(harbor, commit)["outcome"] == case["expect"]["tests"]
    harbor.envs.switch(case["deploy"]["env"], commit)
    status, _ = checks.VERIFIERS[case["verifier"]](harbor, incident, case["env"])
    assert status == case["expect"]["status"]
