"""The rule examples and the §12 scenario through the governed runtime (``adapters``).

In the governed loop the runtime decides authorization (Cedar, then a human approval);
an example action that the rules refuse is denied at gate 1 — by Cedar when it is about
who may change production, by the pack's rule otherwise — and one that needs a human
stops at ``awaiting_approval``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cradle_kg.packs import testing

PACK = Path(__file__).resolve().parent.parent
VERSION = yaml.safe_load((PACK / "manifest.yaml").read_text(encoding="utf-8"))["version"]

#: example -> (governed outcome, the gate-1 check that stops it)
GOVERNED = {
    "bad_production_without_approval": ("awaiting_approval", None),
    "bad_resolve_on_green_tests": ("denied", "domain_preconditions"),
    "bad_second_concurrent_fix": ("denied", "domain_preconditions"),
    "bad_staging_verification_as_authorization": ("denied", "policies"),
    "bad_unverified_commit_to_production": ("denied", "policies"),
    "bad_verified_for_another_incident": ("denied", "domain_preconditions"),
    "good_first_fix_proposal": ("executed", None),
    "good_production_deploy": ("awaiting_approval", None),
}


home = testing.fixture(PACK, scope="module")


def _run(home: testing.PackHome, example: dict[str, Any]) -> Any:
    return home.entry("adapters:run_example")(home.runtime, example)


def test_every_rule_example_has_a_governed_expectation() -> None:
    rules = {p.stem for p in (PACK / "examples").glob("*.json")
             if json.loads(p.read_text())["kind"] == "validator"}
    assert rules == set(GOVERNED)


@pytest.mark.parametrize("name", sorted(GOVERNED))
def test_rule_example_through_the_gates(home: testing.PackHome, name: str) -> None:
    example = json.loads((PACK / "examples" / f"{name}.json").read_text())
    result = _run(home, example)
    outcome, stopped = GOVERNED[name]
    assert (result["outcome"], result["stopped_at"]) == (outcome, stopped), result["reasons"]
    # the example says the same (what `pack test` holds the runner's answer to)
    assert (example["expect"]["outcome"], example["expect"]["stopped_at"]) == (outcome, stopped)
    assert result["as_expected"] is True
    if stopped == "domain_preconditions":
        assert set(example["expect"]["violations"]) <= set(result["codes"])
    assert result["pack_versions"] == [f"infra.uptimeharbor@{VERSION}"]


def test_scenario_outage_to_verified_fix(home: testing.PackHome, service_pids: Any) -> None:
    example = json.loads((PACK / "examples" / "scenario_outage_to_verified_fix.json").read_text())
    result = _run(home, example)
    assert [s["step"] for s in result["steps"] if not s["ok"]] == []
    assert result["as_expected"] is True
    assert result["incident_status"] == example["expect"]["incident_status"]
    assert result["production_commit"] == example["expect"]["production_commit"]
    approved = [s for s in result["steps"] if s["step"].startswith("approved by")]
    assert approved and approved[0]["verification"] == "verified"
    assert approved[0]["policy_ids"] == ["infra.uptimeharbor/production-deploy-explicit"]
    assert not service_pids(str(home.root))
