"""The governed tools: the pack's operations (``tools/ops.py``) behind core contracts."""

from __future__ import annotations

from typing import Any

from cradle_kg.packs.sdk import (
    IdempotencyClass,
    PackContext,
    SideEffectClass,
    ToolCall,
    ToolRefused,
    tool,
)

from ..harbor import acquire_fix_lock as take_fix_lock
from ..harbor import get_incident, release_fix_lock, set_incident_status
from ..tools import ops
from ..verifiers.checks import incident_resolved
from .models import (
    DeployInput,
    DeployOutput,
    EnvInput,
    FixInput,
    FixOutput,
    ProbeOutput,
    ResolveInput,
    ResolveOutput,
    RollbackInput,
    TestsInput,
    TestsOutput,
)
from .worlds import args_of, harbor_of

#: what every tool of the pack shares: it touches only the harbor's worlds
HARBOR: dict[str, Any] = {"blast_radius": ("harbor:*",)}
#: a deploy or a rollback changes its own environment only: gate 2 compares this with the
#: environments its verifier observed changed (governed/gate2.py `_changed`)
ENV_RADIUS = ("harbor:*/{env}",)
#: the incident's fix slot and its status: reversible, harmless to repeat
INCIDENT_CHANGE: dict[str, Any] = {
    **HARBOR, "side_effect_class": SideEffectClass.REVERSIBLE,
    "idempotency": IdempotencyClass.NATURAL, "required_scopes": ("infra:deploy",),
    "target_from": "harbor:*/incident/{incident_id}"}


@tool("infra.detect_outage", input_model=EnvInput, output_model=ProbeOutput,
      side_effect_class=SideEffectClass.READ_ONLY, idempotency=IdempotencyClass.NATURAL,
      required_scopes=("infra:read",),
      description="probe /health and / of an environment: an observation", **HARBOR)
def detect_outage(ctx: PackContext, call: ToolCall) -> ProbeOutput:
    args: EnvInput = args_of(call, EnvInput)
    return ProbeOutput.model_validate(ops.detect_outage(harbor_of(ctx, call.target), args.env))


@tool("infra.run_tests", input_model=TestsInput, output_model=TestsOutput,
      side_effect_class=SideEffectClass.READ_ONLY, idempotency=IdempotencyClass.NATURAL,
      required_scopes=("infra:read",),
      description="the repository's tests on a commit, in a throwaway checkout: an "
                  "observation that never resolves an incident", **HARBOR)
def run_tests(ctx: PackContext, call: ToolCall) -> TestsOutput:
    args: TestsInput = args_of(call, TestsInput)
    return TestsOutput.model_validate(ops.run_tests(harbor_of(ctx, call.target), args.commit))


@tool("infra.claim_fix", input_model=FixInput, output_model=FixOutput,
      verifier="infra.fix-claimed",
      description="claim an incident's one fix slot (released by rollback or resolution)",
      **INCIDENT_CHANGE)
def claim_fix(ctx: PackContext, call: ToolCall) -> FixOutput:
    args: FixInput = args_of(call, FixInput)
    got = take_fix_lock(harbor_of(ctx, call.target), args.incident_id, args.fix_id, args.commit)
    return FixOutput(incident_id=args.incident_id, fix_id=args.fix_id, acquired=got)


def deploy_lookup(ctx: PackContext, call: ToolCall) -> DeployOutput | None:
    found = ops.lookup(harbor_of(ctx, call.target), call.idempotency_key)
    if not found["happened"]:
        return None
    return DeployOutput(env=str(found["env"]), commit=str(found["commit"]),
                        idempotency_key=call.idempotency_key, replayed=True)


@tool("infra.deploy", input_model=DeployInput, output_model=DeployOutput,
      side_effect_class=SideEffectClass.COMPENSABLE, idempotency=IdempotencyClass.KEYED,
      required_scopes=("infra:deploy",), supports_dry_run=True,
      compensation_tool="infra.rollback", verifier="infra.deploy-verified",
      description="replace what runs in an environment by a commit (keyed)",
      target_from="harbor:*/{env}", lookup=deploy_lookup, blast_radius=ENV_RADIUS)
def deploy(ctx: PackContext, call: ToolCall) -> DeployOutput:
    args: DeployInput = args_of(call, DeployInput)
    return DeployOutput.model_validate(
        ops.deploy(harbor_of(ctx, call.target), args.env, args.commit, call.idempotency_key,
                   dry_run=call.dry_run))


@tool("infra.rollback", input_model=RollbackInput, output_model=DeployOutput,
      side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.KEYED,
      required_scopes=("infra:deploy",), supports_dry_run=True,
      verifier="infra.rollback-verified",
      description="put back the previous commit verified in the environment",
      target_from="harbor:*/{env}", blast_radius=ENV_RADIUS)
def rollback(ctx: PackContext, call: ToolCall) -> DeployOutput:
    args: RollbackInput = args_of(call, RollbackInput)
    h = harbor_of(ctx, call.target)
    out = DeployOutput.model_validate(ops.rollback(h, args.env, call.idempotency_key,
                                                   dry_run=call.dry_run))
    if args.incident_id and args.fix_id and not call.dry_run:
        # undoing a fix's deploy abandons the fix: its claim goes back — only when what the
        # rollback took out of the environment is the fix's commit, never because the
        # arguments name the fix (tests/security/test_504)
        out.released_fix = release_fix_lock(h, args.incident_id, args.fix_id,
                                            commit=out.previous_commit)
    return out


@tool("infra.resolve_incident", input_model=ResolveInput, output_model=ResolveOutput,
      verifier="infra.resolution-verified",
      description="close an incident: only on a verified resolution of its own probe",
      **INCIDENT_CHANGE)
def resolve_incident(ctx: PackContext, call: ToolCall) -> ResolveOutput:
    args: ResolveInput = args_of(call, ResolveInput)
    h = harbor_of(ctx, call.target)
    # gate 1 read a past verification: the incident's own probe is read again, now, before
    # anything is written — a resolution while it fails closes nothing
    # (tests/security/test_507), a typed refusal: failed, no human task (test_557)
    incident = get_incident(h, args.incident_id)
    status, detail = incident_resolved(h, incident, str(incident["env"]))
    if status != "verified":
        raise ToolRefused("incident_not_resolved",
                          f"incident `{args.incident_id}` is not resolved now: its original "
                          f"failing probe reads {status} ({detail.get('reason') or status})",
                          hint="resolve it once the incident's own probe passes")
    set_incident_status(h, args.incident_id, "resolved", fix_id=args.fix_id)
    release_fix_lock(h, args.incident_id, args.fix_id)
    return ResolveOutput(incident_id=args.incident_id, status="resolved")
