"""The flow rules as validators, the examples, and the incident fix lock under races."""

from __future__ import annotations

import importlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest

PKG = "cradle_pack_infra_uptimeharbor"
rules = importlib.import_module(f"{PKG}.validators.rules")
harbor_mod = importlib.import_module(f"{PKG}.harbor")
ops = importlib.import_module(f"{PKG}.tools.ops")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
VALIDATOR_EXAMPLES = sorted(
    p for p in EXAMPLES.glob("*.json") if json.loads(p.read_text())["kind"] == "validator"
)
SHA_A, SHA_B = "a" * 40, "b" * 40


def test_examples_cover_good_and_bad() -> None:
    names = [p.stem for p in VALIDATOR_EXAMPLES]
    assert any(n.startswith("good_") for n in names) and any(n.startswith("bad_") for n in names)
    for path in VALIDATOR_EXAMPLES:
        expected = json.loads(path.read_text())["expect"]["violations"]
        assert bool(expected) == path.stem.startswith("bad_"), path.name


@pytest.mark.parametrize("path", VALIDATOR_EXAMPLES, ids=lambda p: p.stem)
def test_validator_examples(path: Path) -> None:
    case = json.loads(path.read_text())
    got = [v.code for v in rules.validate(case["action"], case["state"])]
    assert sorted(got) == sorted(case["expect"]["violations"])


def _state(**over: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "envs": {"production": {"commit": SHA_B, "history": [{"commit": SHA_B}]}},
        "incidents": {"inc-1": {"id": "inc-1", "env": "production", "status": "open"}},
        "fix_locks": {},
        "verifications": [],
    }
    state.update(over)
    return state


def test_well_formed_change() -> None:
    assert [v.code for v in rules.well_formed_change({"kind": "nuke"}, _state())] == [
        "unknown_action_kind"]
    codes = [v.code for v in rules.well_formed_change(
        {"kind": "deploy", "env": "qa", "commit": "HEAD", "incident_id": "inc-9"}, _state())]
    assert codes == ["unknown_environment", "commit_not_pinned", "unknown_incident"]


def test_one_fix_per_incident() -> None:
    locked = _state(fix_locks={"inc-1": {"fix_id": "fix-1"}})
    propose = {"kind": "propose_fix", "incident_id": "inc-1", "fix_id": "fix-2", "commit": SHA_A}
    assert [v.code for v in rules.one_fix_per_incident(propose, locked)] == [
        "incident_fix_in_flight"]
    assert rules.one_fix_per_incident({**propose, "fix_id": "fix-1"}, locked) == []
    deploy = {"kind": "deploy", "env": "staging", "incident_id": "inc-1", "fix_id": "fix-2",
              "commit": SHA_A}
    assert [v.code for v in rules.one_fix_per_incident(deploy, locked)] == ["fix_lock_not_held"]
    closed = _state(incidents={"inc-1": {"id": "inc-1", "status": "resolved"}})
    assert [v.code for v in rules.one_fix_per_incident(propose, closed)] == ["incident_not_open"]


def test_green_tests_are_not_a_staging_verification() -> None:
    action = {"kind": "deploy", "env": "production", "commit": SHA_A, "incident_id": "inc-1",
              "evidence": [{"kind": "test_observation", "outcome": "passed"}]}
    assert [v.code for v in rules.green_tests_not_resolution(action, _state())] == [
        "green_tests_not_resolution"]


def test_resolution_needs_the_production_probe() -> None:
    resolve = {"kind": "resolve_incident", "incident_id": "inc-1", "evidence": []}
    assert [v.code for v in rules.green_tests_not_resolution(resolve, _state())] == [
        "incident_resolution_unverified"]
    staging_only = _state(verifications=[{"verifier": "incident_resolved", "status": "verified",
                                          "env": "staging", "commit": SHA_B,
                                          "incident_id": "inc-1"}])
    assert rules.green_tests_not_resolution(resolve, staging_only) != []
    prod = _state(verifications=[{"verifier": "incident_resolved", "status": "verified",
                                  "env": "production", "commit": SHA_B, "incident_id": "inc-1"}])
    assert rules.green_tests_not_resolution(resolve, prod) == []


def test_rollback_needs_a_verified_target() -> None:
    action = {"kind": "rollback", "env": "production", "incident_id": "inc-1"}
    assert [v.code for v in rules.production_runs_verified_commits_only(action, _state())] == [
        "no_verified_rollback_target"]
    state = _state(envs={"production": {"commit": SHA_B, "history": [
        {"commit": SHA_A}, {"commit": SHA_B}]}},
        verifications=[{"verifier": "service_healthy", "status": "verified",
                        "env": "production", "commit": SHA_A}])
    assert rules.production_runs_verified_commits_only(action, state) == []
    assert harbor_mod.previous_verified_commit(state, "production") == SHA_A


def test_production_invariant() -> None:
    assert [v.code for v in rules.production_invariant(_state())] == [
        "production_runs_unverified_commit"]
    ok = _state(verifications=[{"verifier": "service_healthy", "status": "verified",
                                "env": "production", "commit": SHA_B}])
    assert rules.production_invariant(ok) == []


def test_fix_lock_admits_exactly_one_of_concurrent_fixes(harbor: Any, repo: Any) -> None:
    harbor.envs.switch("production", repo["outage"])
    incident = harbor_mod.open_incident(harbor, "production",
                                        ops.detect_outage(harbor, "production"))
    wins: list[str] = []
    barrier = threading.Barrier(8)

    def propose(n: int) -> None:
        barrier.wait()
        if harbor_mod.acquire_fix_lock(harbor, incident["id"], f"fix-{n}", repo["fix"]):
            wins.append(f"fix-{n}")

    threads = [threading.Thread(target=propose, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(wins) == 1
    assert harbor.snapshot()["fix_locks"][incident["id"]]["fix_id"] == wins[0]
    assert not harbor_mod.release_fix_lock(harbor, incident["id"], "someone-else")
    assert harbor_mod.release_fix_lock(harbor, incident["id"], wins[0])
    assert harbor.snapshot()["fix_locks"] == {}
