"""Verifiers read the probe, the state file and git — never what a tool returned."""

from __future__ import annotations

import importlib
from typing import Any

PKG = "cradle_pack_infra_uptimeharbor"
checks = importlib.import_module(f"{PKG}.verifiers.checks")
ops = importlib.import_module(f"{PKG}.tools.ops")
harbor_mod = importlib.import_module(f"{PKG}.harbor")


def _incident(harbor: Any, repo: Any) -> dict[str, Any]:
    harbor.envs.switch("production", repo["outage"])
    seen = ops.detect_outage(harbor, "production")
    incident: dict[str, Any] = harbor_mod.open_incident(harbor, "production", seen)
    return incident


def test_green_tests_do_not_resolve_the_incident(harbor: Any, repo: Any) -> None:
    incident = _incident(harbor, repo)
    assert incident["original_probe"]["failing_paths"] == ["/health", "/"]
    assert ops.run_tests(harbor, repo["green_not_fixed"])["outcome"] == "passed"
    harbor.envs.switch("staging", repo["green_not_fixed"])
    status, detail = checks.incident_resolved(harbor, incident, "staging")
    assert status == "failed"
    assert detail["still_failing"] == ["/health", "/"]


def test_the_fix_resolves_the_original_probe(harbor: Any, repo: Any) -> None:
    incident = _incident(harbor, repo)
    harbor.envs.switch("staging", repo["fix"])
    status, detail = checks.incident_resolved(harbor, incident, "staging")
    assert status == "verified", detail
    assert detail["still_failing"] == []


def test_a_staging_only_fix_fails_in_production(harbor: Any, repo: Any) -> None:
    incident = _incident(harbor, repo)
    harbor.envs.switch("staging", repo["fix_staging_only"])
    assert checks.incident_resolved(harbor, incident, "staging")[0] == "verified"
    harbor.envs.switch("production", repo["fix_staging_only"])
    assert checks.incident_resolved(harbor, incident, "production")[0] == "failed"
    assert checks.service_healthy(harbor, "production")[0] == "failed"


def test_nothing_running_is_inconclusive_not_verified(harbor: Any, repo: Any) -> None:
    incident = _incident(harbor, repo)
    assert checks.incident_resolved(harbor, incident, "staging")[0] == "inconclusive"
    assert checks.service_healthy(harbor, "staging")[0] == "inconclusive"
    assert checks.deployed_commit_matches(harbor, "staging", repo["fix"])[0] == "inconclusive"
    no_probe = {**incident, "original_probe": {"failing_paths": []}}
    harbor.envs.switch("staging", repo["fix"])
    assert checks.incident_resolved(harbor, no_probe, "staging")[0] == "inconclusive"


def test_deployed_commit_matches_reads_three_sources(harbor: Any, repo: Any) -> None:
    harbor.envs.switch("staging", repo["fix"])
    status, detail = checks.deployed_commit_matches(harbor, "staging", "fix")  # a tag resolves
    assert status == "verified", detail
    assert set(detail["sources"].values()) == {repo["fix"]}
    assert checks.deployed_commit_matches(harbor, "staging", repo["good"])[0] == "failed"
    assert checks.deployed_commit_matches(harbor, "staging", "nope")[0] == "failed"


def test_a_lying_state_file_is_caught_by_the_live_probe(harbor: Any, repo: Any) -> None:
    harbor.envs.switch("staging", repo["good"])
    with harbor.store.transaction() as state:  # the record claims the fix is deployed
        state["envs"]["staging"]["commit"] = repo["fix"]
    status, detail = checks.deployed_commit_matches(harbor, "staging", repo["fix"])
    assert status == "failed"
    assert detail["sources"]["live"] == repo["good"]


def test_service_healthy(harbor: Any, repo: Any) -> None:
    harbor.envs.switch("staging", repo["good"])
    assert checks.service_healthy(harbor, "staging")[0] == "verified"
    harbor.envs.switch("staging", repo["outage"])
    status, detail = checks.service_healthy(harbor, "staging")
    assert status == "failed" and "db_url" in detail["reason"]
