"""Cedar: the schema validates the policies; production needs an explicit permit + approval."""

from __future__ import annotations

import importlib
from typing import Any

import cedarpy
import pytest

from cradle_kg.packs.sdk import ApprovalError

PKG = "cradle_pack_infra_uptimeharbor"
policy = importlib.import_module(f"{PKG}.policy")

AGENT = policy.Principal("Agent", "harbor-fixer")
DEPLOYER = policy.Principal("Agent", "harbor-fixer", ("production-deployers",))
CTX = {"commit": "a" * 40, "incident_id": "inc-1", "staging_verified": True}


def test_policies_validate_against_schema() -> None:
    result = cedarpy.validate_policies(policy.POLICY_FILE.read_text(),
                                       policy.SCHEMA_FILE.read_text())
    assert result.validation_passed, result.errors


def test_a_policy_referencing_an_unknown_attribute_does_not_validate() -> None:
    bad = 'permit (principal, action == Action::"deploy", resource) when { resource.owner == "x" };'
    assert not cedarpy.validate_policies(bad, policy.SCHEMA_FILE.read_text()).validation_passed


def test_agents_may_deploy_to_staging() -> None:
    decision = policy.authorize(AGENT, "deploy", "staging", {**CTX, "staging_verified": False})
    assert decision.allowed and decision.policy_ids == ["agents-deploy-staging"]
    assert not decision.requires_approval


def test_production_needs_an_explicit_permit() -> None:
    assert not policy.authorize(AGENT, "deploy", "production", CTX).allowed
    decision = policy.authorize(DEPLOYER, "deploy", "production", CTX)
    assert decision.allowed and decision.policy_ids == ["production-deploy-explicit"]
    assert decision.requires_approval  # from @requires_approval("true")


def test_production_never_receives_an_unverified_commit() -> None:
    decision = policy.authorize(DEPLOYER, "deploy", "production",
                                {**CTX, "staging_verified": False})
    assert not decision.allowed
    assert decision.policy_ids == ["production-never-unverified"]


def test_rollback_and_reads() -> None:
    assert policy.authorize(DEPLOYER, "rollback", "production", CTX).allowed
    assert not policy.authorize(AGENT, "rollback", "production", CTX).allowed
    assert policy.authorize(AGENT, "detect_outage", "production").allowed
    assert not policy.authorize(AGENT, "deploy", "qa", CTX).allowed
    assert len(policy.policy_version()) == 16


def _action() -> dict[str, Any]:
    return {"kind": "deploy", "env": "production", "commit": "a" * 40,
            "incident_id": "inc-1", "actor": "harbor-fixer"}


def test_approval_hook_binding() -> None:
    decision = policy.authorize(DEPLOYER, "deploy", "production", CTX)
    action = _action()
    grant = policy.request_approval(
        action, decision,
        lambda req: {"approved": True, "approver_id": "human:sre",
                     "action_digest": req["action_digest"]})
    assert grant["approver_id"] == "human:sre"
    cases = [
        lambda req: None,
        lambda req: {"approved": False, "approver_id": "human:sre",
                     "action_digest": req["action_digest"]},
        lambda req: {"approved": True, "approver_id": "human:sre", "action_digest": "other"},
        lambda req: {"approved": True, "approver_id": "harbor-fixer",
                     "action_digest": req["action_digest"]},
        lambda req: {"approved": True, "action_digest": req["action_digest"]},
    ]
    for hook in cases:
        with pytest.raises(ApprovalError):
            policy.request_approval(action, decision, hook)
    other = {**action, "commit": "b" * 40}
    assert policy.action_digest(other) != policy.action_digest(action)
