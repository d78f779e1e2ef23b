"""The contracts of the pack's tools: what each one may do, and how to undo it.

Declaring the wrong side-effect class is a security defect (design paper §13): these
dicts are reviewed as a security boundary. The core's Tool Gateway adapts them.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

SideEffectClass = Literal[
    "read_only", "reversible", "compensable", "external_write", "irreversible"
]
IdempotencyClass = Literal["natural", "keyed", "none"]

SIDE_EFFECT_CLASSES = ("read_only", "reversible", "compensable", "external_write", "irreversible")
IDEMPOTENCY_CLASSES = ("natural", "keyed", "none")


class ToolContract(TypedDict):
    id: str
    version: str
    description: str
    side_effect_class: SideEffectClass
    idempotency: IdempotencyClass
    compensation: str | None
    supports_dry_run: bool
    required_scopes: list[str]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]


_ENV = {"type": "string", "enum": ["staging", "production"]}
_SHA = {"type": "string", "pattern": "^[0-9a-f]{40}$"}
_COMMIT_IN = {"type": "string", "minLength": 1}
_KEY = {"type": "string", "minLength": 8, "maxLength": 200}


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


_PROBE: dict[str, Any] = {
    "type": "object",
    "required": ["healthy", "status_code", "commit", "latency_ms", "checked_at"],
    "properties": {
        "healthy": {"type": "boolean"},
        "status_code": {"type": ["integer", "null"]},
        "commit": {"type": ["string", "null"]},
        "latency_ms": {"type": "number"},
        "checked_at": {"type": "string"},
    },
}

_DEPLOY_OUT: dict[str, Any] = {
    "type": "object",
    "required": ["env", "commit", "previous_commit", "idempotency_key", "replayed", "dry_run"],
    "properties": {
        "env": _ENV,
        "commit": _SHA,
        "previous_commit": {"type": ["string", "null"]},
        "idempotency_key": {"type": ["string", "null"]},
        "replayed": {"type": "boolean"},
        "dry_run": {"type": "boolean"},
        "pid": {"type": ["integer", "null"]},
        "port": {"type": ["integer", "null"]},
    },
}

CONTRACTS: dict[str, ToolContract] = {
    "infra.detect_outage": {
        "id": "infra.detect_outage",
        "version": "1.0.0",
        "description": "probe /health and / of an environment; an observation, not a fact",
        "side_effect_class": "read_only",
        "idempotency": "natural",
        "compensation": None,
        "supports_dry_run": False,
        "required_scopes": ["infra:read"],
        "input_schema": _obj({"env": _ENV}, ["env"]),
        "output_schema": {
            **_PROBE,
            "required": [*_PROBE["required"], "env", "outage"],
            "properties": {
                **_PROBE["properties"],
                "env": _ENV,
                "outage": {"type": "boolean"},
            },
        },
    },
    "infra.run_tests": {
        "id": "infra.run_tests",
        "version": "1.0.0",
        "description": "run the repository's unit tests on a commit in a throwaway checkout; "
        "the result is an observation and never resolves an incident",
        "side_effect_class": "read_only",
        "idempotency": "natural",
        "compensation": None,
        "supports_dry_run": False,
        "required_scopes": ["infra:read", "infra:test"],
        "input_schema": _obj({"commit": _COMMIT_IN}, ["commit"]),
        "output_schema": {
            "type": "object",
            "required": ["kind", "commit", "outcome", "returncode", "output", "duration_ms"],
            "properties": {
                "kind": {"const": "observation"},
                "commit": _SHA,
                "outcome": {"enum": ["passed", "failed", "error"]},
                "returncode": {"type": ["integer", "null"]},
                "output": {"type": "string"},
                "duration_ms": {"type": "number"},
            },
        },
    },
    "infra.deploy": {
        "id": "infra.deploy",
        "version": "1.0.0",
        "description": "replace what runs in an environment by a commit; keyed: the same "
        "key never deploys twice; compensated by infra.rollback",
        "side_effect_class": "compensable",
        "idempotency": "keyed",
        "compensation": "infra.rollback",
        "supports_dry_run": True,
        "required_scopes": ["infra:deploy"],
        "input_schema": _obj(
            {"env": _ENV, "commit": _COMMIT_IN, "idempotency_key": _KEY,
             "dry_run": {"type": "boolean"}},
            ["env", "commit", "idempotency_key"],
        ),
        "output_schema": _DEPLOY_OUT,
    },
    "infra.rollback": {
        "id": "infra.rollback",
        "version": "1.0.0",
        "description": "put back the previous commit verified in the environment",
        "side_effect_class": "reversible",
        "idempotency": "keyed",
        "compensation": "infra.deploy",
        "supports_dry_run": True,
        "required_scopes": ["infra:deploy"],
        "input_schema": _obj(
            {"env": _ENV, "idempotency_key": _KEY, "dry_run": {"type": "boolean"}},
            ["env", "idempotency_key"],
        ),
        "output_schema": _DEPLOY_OUT,
    },
    "infra.lookup": {
        "id": "infra.lookup",
        "version": "1.0.0",
        "description": "reconcile after a crash: did the deploy with this key happen?",
        "side_effect_class": "read_only",
        "idempotency": "natural",
        "compensation": None,
        "supports_dry_run": False,
        "required_scopes": ["infra:read"],
        "input_schema": _obj({"idempotency_key": _KEY}, ["idempotency_key"]),
        "output_schema": {
            "type": "object",
            "required": ["idempotency_key", "found", "happened"],
            "properties": {
                "idempotency_key": {"type": "string"},
                "found": {"type": "boolean"},
                "happened": {"type": "boolean"},
                "status": {"type": ["string", "null"]},
                "env": {"type": ["string", "null"]},
                "commit": {"type": ["string", "null"]},
            },
        },
    },
}
