"""Cedar evaluation of the pack's policies, and the human-approval hook.

``authorize`` answers with a ``PolicyDecision`` (never a bare boolean): the determining
policy ids, whether one of them carries ``@requires_approval("true")``, and the digest
of the policy files that decided. ``request_approval`` binds an approval to a digest of
the exact action and refuses self-approval.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import cedarpy

from cradle_kg.packs.sdk import ApprovalError, PolicyError

POLICY_DIR = Path(__file__).resolve().parent / "policies"
POLICY_FILE = POLICY_DIR / "infra.cedar"
SCHEMA_FILE = POLICY_DIR / "infra.cedarschema"
ENV_TIERS = {"staging": "staging", "production": "production"}


@dataclass(frozen=True)
class Principal:
    kind: str  # "Agent" | "Human"
    id: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class PolicyDecision:
    allowed: bool
    policy_ids: list[str]
    requires_approval: bool
    errors: list[str]
    policy_version: str
    request: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": "allow" if self.allowed else "deny",
            "policy_ids": list(self.policy_ids),
            "requires_approval": self.requires_approval,
            "errors": list(self.errors),
            "policy_version": self.policy_version,
        }


@lru_cache(maxsize=1)
def _loaded() -> tuple[str, str, dict[str, dict[str, str]], str]:
    policies = POLICY_FILE.read_text(encoding="utf-8")
    schema = SCHEMA_FILE.read_text(encoding="utf-8")
    result = cedarpy.validate_policies(policies, schema)
    if not result.validation_passed:
        raise PolicyError(f"infra policies do not validate: {result.errors}")
    parsed = json.loads(cedarpy.policies_to_json_str(policies))
    annotations = {
        pid: dict(body.get("annotations", {})) for pid, body in parsed["staticPolicies"].items()
    }
    version = hashlib.sha256((policies + "\0" + schema).encode("utf-8")).hexdigest()[:16]
    return policies, schema, annotations, version


def policy_version() -> str:
    return _loaded()[3]


#: the role a principal's groups give it, in the core's request shape (``principal.role``)
GROUP_ROLES = {"production-deployers": "production-deployer"}


def role_of(principal: Principal) -> str:
    for group in principal.groups:
        if group in GROUP_ROLES:
            return GROUP_ROLES[group]
    return "sre-agent" if principal.kind == "Agent" else principal.kind.lower()


def authorize(
    principal: Principal, action: str, env: str, context: Mapping[str, Any] | None = None
) -> PolicyDecision:
    """Evaluate ``principal`` doing ``action`` on environment ``env``.

    The request has the shape the core's gate 1 sends (tool id ``infra.<action>``, the
    environment in the context, the change in ``context.arguments``); a recorded staging
    verification (``staging_verified``) is cited as ``arguments.staging_verification``.
    """
    policies, schema, annotations, version = _loaded()
    tier = ENV_TIERS.get(env)
    if tier is None:
        return PolicyDecision(False, [], False, [f"unknown environment `{env}`"], version)
    ctx = dict(context or {})
    tool = f"infra.{action}"
    read_only = action in ("detect_outage", "run_tests", "lookup")
    arguments: dict[str, Any] = {"env": env}
    if not read_only:
        arguments.update({k: str(ctx[k]) for k in ("commit", "incident_id") if k in ctx})
        if ctx.get("staging_verified"):
            arguments["staging_verification"] = "recorded"
    role = role_of(principal)
    entities: list[dict[str, Any]] = [
        {"uid": {"type": "Agent", "id": principal.id},
         "attrs": {"role": role, "tenant": "default"}, "parents": []},
    ]
    request: dict[str, Any] = {
        "principal": {"type": "Agent", "id": principal.id},
        "action": {"type": "Action", "id": tool},
        "resource": {"type": "Resource", "id": f"harbor:{env}"},
        "context": {
            "tool": tool, "side_effect_class": "read_only" if read_only else "compensable",
            "environment": env, "declared_risk": "low", "tenant": "default", "task_id": "",
            "on_behalf_of": "", "role": role, "dry_run": False, "evidence_count": 0,
            "arguments": arguments,
        },
    }
    result = cedarpy.is_authorized(request, policies, entities, schema)
    ids = [annotations.get(r, {}).get("id", r) for r in result.diagnostics.reasons]
    needs = any(
        annotations.get(r, {}).get("requires_approval") == "true"
        for r in result.diagnostics.reasons
    )
    errors = [str(e) for e in result.diagnostics.errors]
    return PolicyDecision(bool(result.allowed), ids, needs and bool(result.allowed), errors,
                          version, request)


# -- approval ---------------------------------------------------------------------------
ApprovalCallback = Callable[[Mapping[str, Any]], Mapping[str, Any] | None]


def action_digest(action: Mapping[str, Any]) -> str:
    """A digest of the exact action an approval is bound to."""
    keep = {k: action.get(k) for k in ("kind", "env", "commit", "incident_id", "actor")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode("utf-8")).hexdigest()


def request_approval(
    action: Mapping[str, Any], decision: PolicyDecision, approve: ApprovalCallback
) -> dict[str, Any]:
    """Ask the caller-supplied hook; returns a valid, approved grant or raises.

    The grant must be ``{"approved": True, "approver_id": ..., "action_digest": ...}``
    for exactly this action, and the approver may not be the requester.
    """
    digest = action_digest(action)
    req = {
        "action": dict(action),
        "action_digest": digest,
        "policy_ids": decision.policy_ids,
        "requested_by": action.get("actor"),
        "scope": "production_deployment",
    }
    grant = approve(req)
    if grant is None or not grant.get("approved"):
        raise ApprovalError(f"approval refused for `{action.get('kind')}` to `{action.get('env')}`")
    if grant.get("action_digest") != digest:
        raise ApprovalError("approval is bound to a different action")
    approver = grant.get("approver_id")
    if not approver:
        raise ApprovalError("approval carries no approver identity")
    if approver == action.get("actor"):
        raise ApprovalError(f"self-approval refused: `{approver}` requested the action")
    return {"approved": True, "approver_id": approver, "action_digest": digest,
            "policy_ids": decision.policy_ids}
