"""infra.uptimeharbor in the governed runtime: tools, verifiers, validators, example runner.

``register(runtime, pack)`` (the manifest's ``runtime:`` hook) wraps the pack's plain
functions as core contracts. A target names the *world* (one repository and its two
environments, under ``<home>/uptimeharbor/<world>/``) and what in it is touched:
``harbor:<world>/production``, ``harbor:<world>/repo``, ``harbor:<world>/incident/<id>``.

=========================  ===========  ===========  ===================================
tool                       side effect  idempotency  gate 2
=========================  ===========  ===========  ===================================
``infra.detect_outage``    read_only    natural      — (an observation)
``infra.run_tests``        read_only    natural      — (an observation, never a fact)
``infra.claim_fix``        reversible   natural      ``infra.fix-claimed``
``infra.deploy``           compensable  keyed        ``infra.deploy-verified``;
                                                     compensation ``infra.rollback``; lookup
``infra.rollback``         reversible   keyed        ``infra.rollback-verified``
``infra.resolve_incident`` reversible   natural      ``infra.incident-resolved``
=========================  ===========  ===========  ===================================

Verifiers read the probe, git and the state file — never a tool's output — and record
what they read in the pack's verification log (``harbor.record_verification``), which is
what the flow rules consult: ``infra.incident-resolved`` (the paths that failed when the
incident was opened pass now), ``infra.deployed-commit-matches``, ``infra.service-healthy``
(each registered alone; ``infra.deploy-verified`` runs the three).

Gate-1 validators are the pack's rules (``validators/rules.py``) over the proposal and a
snapshot of the state: ``well_formed_change``, ``one_fix_per_incident``,
``green_tests_not_resolution``, ``production_runs_verified_commits_only`` (plus: the cited
``staging_verification`` is the recorded one). "Staging verification does not authorize
production" is structural: the production permit is its own Cedar policy
(``production-deploy-explicit``: its own role, ``@requires_approval``), a staging permit
never covers production (``decision-is-for-its-environment``), and the staging verification
is only a condition. A failed post-deploy verification compensates with a rollback to the
last verified commit, which also gives the fix's claim back.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cradle_kg.config import Approver, RuntimeConfig
from cradle_kg.loop.approvals import token_hash
from cradle_kg.loop.gate1.findings import Finding
from cradle_kg.records import (
    Agent,
    ApprovalStatus,
    CheckStatus,
    IdempotencyClass,
    Outcome,
    OutcomeStatus,
    Permission,
    Proposal,
    SideEffectClass,
    VerificationCheck,
    VerificationStatus,
)
from cradle_kg.tools import ToolCall, ToolSpec
from cradle_kg.verifiers import VerifierReport, VerifyRequest

from .harbor import (
    Harbor,
    get_incident,
    is_verified_in,
    open_incident,
    record_verification,
    release_fix_lock,
    set_incident_status,
    staging_resolution,
)
from .harbor import acquire_fix_lock as take_fix_lock
from .probe import base_url_for, probe
from .scenario import steps
from .service.envs import ENVIRONMENTS
from .state import atomic_write_json
from .tools import ops
from .validators import rules
from .verifiers.checks import deployed_commit_matches, incident_resolved, service_healthy

if TYPE_CHECKING:
    from cradle_kg import Runtime
    from cradle_kg.packs.loader import Pack

V = VerificationStatus
Env = Literal["staging", "production"]

#: example identities: the fixer may ask for production deploys, never approve them; a
#: second agent holds only the staging role; a monitor probes; an on-call human approves
FIXER = "agent:harbor-fixer"
FIXER_STAGING_ONLY = "agent:harbor-fixer-2"
MONITOR = "agent:harbor-monitor"
RELEASE_MANAGER = "user:release-manager"
ON_CALL = "user:sre-on-call"
EXAMPLE_TOKENS = {ON_CALL: "example-token-sre-on-call"}


# --- contracts ---------------------------------------------------------------------------

class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


_SHA = r"^[0-9a-f]{40}$"


class EnvInput(_In):
    env: Env


class ProbeOutput(BaseModel):
    model_config = ConfigDict(extra="allow")
    env: str
    outage: bool
    healthy: bool
    status_code: int | None
    commit: str | None
    checked_at: str
    reason: str | None = None
    checks: list[dict[str, Any]] = []


class TestsInput(_In):
    commit: str = Field(pattern=_SHA)


class TestsOutput(BaseModel):
    kind: Literal["observation"]
    commit: str
    outcome: Literal["passed", "failed", "error"]
    returncode: int | None
    output: str
    duration_ms: float


class FixInput(_In):
    incident_id: str = Field(min_length=1, max_length=64)
    fix_id: str = Field(min_length=1, max_length=64)
    commit: str = Field(pattern=_SHA)


class FixOutput(BaseModel):
    incident_id: str
    fix_id: str
    acquired: bool


class DeployInput(_In):
    env: Env
    commit: str = Field(pattern=_SHA)
    incident_id: str = Field(min_length=1, max_length=64)
    fix_id: str = Field(min_length=1, max_length=64)
    #: the recorded staging `incident_resolved` verification this production deploy cites
    staging_verification: str | None = None


class RollbackInput(_In):
    """What a compensation passes (the failed deploy's arguments) or an agent asks."""

    env: Env
    commit: str | None = Field(default=None, pattern=_SHA)  # the commit being rolled back
    incident_id: str | None = None
    fix_id: str | None = None
    staging_verification: str | None = None


class DeployOutput(BaseModel):
    env: str
    commit: str
    previous_commit: str | None = None
    idempotency_key: str | None = None
    replayed: bool = False
    dry_run: bool = False
    pid: int | None = None
    port: int | None = None
    released_fix: bool = False


class EvidenceRef(BaseModel):
    model_config = ConfigDict(extra="allow")  # an observation may say what it saw
    kind: Literal["test_observation", "verification"]
    ref: str


class ResolveInput(_In):
    incident_id: str = Field(min_length=1, max_length=64)
    fix_id: str = Field(min_length=1, max_length=64)
    evidence: list[EvidenceRef] = []


class ResolveOutput(BaseModel):
    incident_id: str
    status: str


# --- worlds ------------------------------------------------------------------------------

_WORLDS_LOCK = threading.Lock()
_WORLDS: dict[Path, Harbor] = {}


def world_dir(root: Path, world: str) -> Path:
    return root / "uptimeharbor" / world


def harbor_for(root: Path, world: str) -> Harbor:
    """The harbor of ``world`` under the runtime's home (one instance per world)."""
    base = world_dir(root, world)
    with _WORLDS_LOCK:
        found = _WORLDS.get(base)
        if found is None:
            found = _WORLDS[base] = Harbor(base / "harbor", base / "repo")
        return found


def world_of(target: str) -> str:
    """``harbor:<world>/<thing>`` -> ``<world>``."""
    if not target.startswith("harbor:") or "/" not in target:
        raise ValueError(f"`{target}` is not a harbor target (harbor:<world>/<thing>)")
    return target.removeprefix("harbor:").split("/", 1)[0]


def target(world: str, thing: str) -> str:
    return f"harbor:{world}/{thing}"


# --- validators: the pack's rules over (proposal, state snapshot) ---------------------------

_KINDS = {"infra.claim_fix": "propose_fix", "infra.deploy": "deploy",
          "infra.rollback": "rollback", "infra.resolve_incident": "resolve_incident"}


def rule_action(proposal: Proposal) -> dict[str, Any]:
    """The pack rules' view of a proposal (``validators/rules.py`` docstring)."""
    args = dict(proposal.action.arguments)
    evidence = list(args.get("evidence") or [])
    if args.get("staging_verification"):
        evidence.append({"kind": "verification", "ref": args["staging_verification"]})
    return {"kind": _KINDS.get(proposal.action.action_type, proposal.action.action_type),
            "actor": proposal.agent_id, "env": args.get("env"), "commit": args.get("commit"),
            "incident_id": args.get("incident_id"), "fix_id": args.get("fix_id"),
            "evidence": evidence}


def _findings(violations: list[rules.Violation]) -> list[Finding]:
    return [Finding(code=v.code, message=f"{v.code}: {v.message}") for v in violations]


Validator = Callable[[Proposal, ToolSpec], list[Finding]]


def rule_validator(root: Path, rule: rules.Validator) -> Validator:
    def check(proposal: Proposal, spec: ToolSpec) -> list[Finding]:
        state = harbor_for(root, world_of(proposal.action.target)).snapshot()
        return _findings(rule(rule_action(proposal), state))
    return check


def cited_verification_validator(root: Path) -> Validator:
    """A production deploy cites *the* recorded staging resolution of its commit."""
    def check(proposal: Proposal, spec: ToolSpec) -> list[Finding]:
        args = proposal.action.arguments
        if args.get("env") != "production" or not args.get("staging_verification"):
            return []
        state = harbor_for(root, world_of(proposal.action.target)).snapshot()
        proof = staging_resolution(state, str(args.get("commit")), str(args.get("incident_id")))
        if proof is not None and proof["id"] == args["staging_verification"]:
            return []
        return [Finding(code="staging_verification_mismatch",
                        message="staging_verification_mismatch: `"
                                f"{args['staging_verification']}` is not the recorded, verified "
                                "staging resolution of this commit for this incident")]
    return check


# --- verifiers ---------------------------------------------------------------------------

_STATUS = {"verified": V.VERIFIED, "failed": V.FAILED, "inconclusive": V.INCONCLUSIVE}


def _check(name: str, verdict: tuple[str, dict[str, Any]]) -> VerificationCheck:
    status, detail = verdict
    reason = detail.get("reason")
    return VerificationCheck(name=name, status=_STATUS[status],
                             detail=str(reason) if reason else status)


def _running(h: Harbor, env: str) -> VerificationCheck:
    url = base_url_for(h.store.env(env))
    if url is None:
        return VerificationCheck(name="resource_exists", status=V.FAILED,
                                 detail=f"`{env}` is not running")
    seen = probe(url)
    return VerificationCheck(name="resource_exists",
                             status=V.VERIFIED if seen["reachable"] else V.FAILED,
                             detail=f"`{env}` answers at {url}" if seen["reachable"]
                             else f"`{env}` does not answer")


def _report(checks: list[VerificationCheck], evidence: dict[str, Any]) -> VerifierReport:
    return VerifierReport(checks=tuple(checks), read_at=datetime.now(UTC), evidence=evidence,
                          source="uptimeharbor probe + git + state file")


def _record(h: Harbor, name: str, verdict: tuple[str, dict[str, Any]], env: str,
            commit: str | None, incident_id: str | None) -> str:
    status, detail = verdict
    return str(record_verification(h, verifier=name, status=status, detail=detail, env=env,
                                   commit=commit, incident_id=incident_id)["id"])


def deploy_verifier(root: Path) -> Callable[[VerifyRequest], VerifierReport]:
    """Commit matches (git, state, checkout, live), service healthy, the incident's probe."""
    def verify(req: VerifyRequest) -> VerifierReport:
        args = req.arguments
        assert isinstance(args, DeployInput)
        h = harbor_for(root, world_of(req.action.target))
        incident = get_incident(h, args.incident_id)
        reads = {
            "deployed_commit_matches": deployed_commit_matches(h, args.env, args.commit),
            "service_healthy": service_healthy(h, args.env),
            "incident_resolved": incident_resolved(h, incident, args.env),
        }
        recorded = {name: _record(h, name, verdict, args.env, args.commit, args.incident_id)
                    for name, verdict in reads.items()}
        matches = _check("expected_state", reads["deployed_commit_matches"])
        return _report([_running(h, args.env), matches,
                        _check("service-healthy", reads["service_healthy"]),
                        _check("incident-resolved", reads["incident_resolved"])],
                       {"env": args.env, "commit": args.commit, "recorded": recorded,
                        "statuses": {k: v[0] for k, v in reads.items()}})
    return verify


def rollback_verifier(root: Path) -> Callable[[VerifyRequest], VerifierReport]:
    """The env runs a commit verified there before (not the one rolled back), healthy."""
    def verify(req: VerifyRequest) -> VerifierReport:
        args = req.arguments
        assert isinstance(args, RollbackInput)
        h = harbor_for(root, world_of(req.action.target))
        live_url = base_url_for(h.store.env(args.env))
        live = probe(live_url)["commit"] if live_url else None
        healthy = service_healthy(h, args.env)
        state = h.snapshot()
        good = live is not None and live != args.commit and is_verified_in(state, args.env, live)
        matches = deployed_commit_matches(h, args.env, live) if live else (
            "inconclusive", {"reason": "no live commit"})
        _record(h, "service_healthy", healthy, args.env, live, args.incident_id)
        return _report([
            _running(h, args.env),
            VerificationCheck(name="expected_state", status=V.VERIFIED if good else V.FAILED,
                              detail=f"`{args.env}` runs `{str(live)[:12]}`, verified there "
                                     "before" if good else f"`{args.env}` runs `{live}`, not a "
                                     "previously verified commit"),
            _check("deployed-commit-matches", matches),
            _check("service-healthy", healthy)],
            {"env": args.env, "live_commit": live, "rolled_back_from": args.commit})
    return verify


def resolution_verifier(root: Path) -> Callable[[VerifyRequest], VerifierReport]:
    """The incident's original failing probe passes now, and the record says resolved."""
    def verify(req: VerifyRequest) -> VerifierReport:
        args = req.arguments
        assert isinstance(args, ResolveInput)
        h = harbor_for(root, world_of(req.action.target))
        incident = get_incident(h, args.incident_id)
        env = str(incident["env"])
        verdict = incident_resolved(h, incident, env)
        return _report([
            VerificationCheck(name="resource_exists", status=V.VERIFIED,
                              detail=f"incident `{args.incident_id}` recorded"),
            VerificationCheck(name="expected_state",
                              status=V.VERIFIED if incident["status"] == "resolved" else V.FAILED,
                              detail=f"incident status `{incident['status']}`"),
            _check("incident-resolved", verdict)],
            {"incident_id": args.incident_id, "env": env, "probe": verdict[0]})
    return verify


def fix_verifier(root: Path) -> Callable[[VerifyRequest], VerifierReport]:
    def verify(req: VerifyRequest) -> VerifierReport:
        args = req.arguments
        assert isinstance(args, FixInput)
        h = harbor_for(root, world_of(req.action.target))
        lock = h.snapshot()["fix_locks"].get(args.incident_id)
        held = lock is not None and lock.get("fix_id") == args.fix_id
        return _report([
            VerificationCheck(name="resource_exists",
                              status=V.VERIFIED if lock else V.FAILED,
                              detail="the incident has a fix claim" if lock else "no claim"),
            VerificationCheck(name="expected_state", status=V.VERIFIED if held else V.FAILED,
                              detail=f"claim held by `{lock.get('fix_id') if lock else None}`")],
            {"incident_id": args.incident_id, "lock": lock})
    return verify


def single_verifier(root: Path, name: str) -> Callable[[VerifyRequest], VerifierReport]:
    """One of the pack's verifiers alone, over a deploy's intended env, commit, incident."""
    def verify(req: VerifyRequest) -> VerifierReport:
        args = req.arguments
        h = harbor_for(root, world_of(req.action.target))
        env = str(getattr(args, "env", None) or "production")
        if name == "incident_resolved":
            incident = get_incident(h, str(getattr(args, "incident_id", "")))
            verdict = incident_resolved(h, incident, str(incident["env"]))
        elif name == "deployed_commit_matches":
            verdict = deployed_commit_matches(h, env, str(getattr(args, "commit", "")))
        else:
            verdict = service_healthy(h, env)
        return _report([_running(h, env), _check("expected_state", verdict)],
                       {"verifier": name, "status": verdict[0]})
    return verify


# --- identities (example and demo only; a real home configures its own) -------------------

def identities() -> RuntimeConfig:
    envs = ("local", "staging", "production")
    return RuntimeConfig(
        agents=(
            Agent(id=FIXER, role="production-deployer", acts_for=RELEASE_MANAGER,
                  environments=envs, permitted_scopes=("infra:read", "infra:deploy")),
            Agent(id=FIXER_STAGING_ONLY, role="sre-agent", acts_for=RELEASE_MANAGER,
                  environments=envs, permitted_scopes=("infra:read", "infra:deploy")),
            Agent(id=MONITOR, role="monitor", environments=("staging", "production"),
                  permitted_scopes=("infra:read",)),
        ),
        permissions=(
            Permission(subject=FIXER, action_type="infra.*", resource_selector="harbor:*"),
            Permission(subject=FIXER_STAGING_ONLY, action_type="infra.*",
                       resource_selector="harbor:*"),
            Permission(subject=MONITOR, action_type="infra.detect_outage",
                       resource_selector="harbor:*"),
        ),
        approvers=(Approver(id=ON_CALL, role="sre-on-call", scopes=("production_deployment",),
                            token_hash=token_hash(EXAMPLE_TOKENS[ON_CALL])),),
        # approvals come from the pack's Cedar (`production-deploy-explicit`), so that a
        # compensating rollback in production is not held back waiting for a human
        approval_environments=(),
    )


def merged(base: RuntimeConfig, extra: RuntimeConfig) -> RuntimeConfig:
    """``base`` plus the pack's identities; the pack's approval environments replace the
    base's (production approvals come from its Cedar policy, not from the environment)."""
    return base.merged_with(extra).model_copy(
        update={"approval_environments": extra.approval_environments})


def ensure_identities(runtime: Runtime) -> None:
    if runtime.config.agent(FIXER) is None:
        runtime.configure(merged(runtime.config, identities()))


# --- registration ------------------------------------------------------------------------

def register(runtime: Runtime, pack: Pack) -> None:
    """The manifest's ``runtime:`` hook."""
    root = Path(runtime.home.root)
    version = pack.version

    def h_of(call: ToolCall) -> Harbor:
        return harbor_for(root, world_of(call.target))

    def detect(call: ToolCall) -> ProbeOutput:
        args = call.arguments
        assert isinstance(args, EnvInput)
        return ProbeOutput.model_validate(ops.detect_outage(h_of(call), args.env))

    def tests(call: ToolCall) -> TestsOutput:
        args = call.arguments
        assert isinstance(args, TestsInput)
        return TestsOutput.model_validate(ops.run_tests(h_of(call), args.commit))

    def claim(call: ToolCall) -> FixOutput:
        args = call.arguments
        assert isinstance(args, FixInput)
        got = take_fix_lock(h_of(call), args.incident_id, args.fix_id, args.commit)
        return FixOutput(incident_id=args.incident_id, fix_id=args.fix_id, acquired=got)

    def deploy(call: ToolCall) -> DeployOutput:
        args = call.arguments
        assert isinstance(args, DeployInput)
        return DeployOutput.model_validate(
            ops.deploy(h_of(call), args.env, args.commit, call.idempotency_key,
                       dry_run=call.dry_run))

    def deploy_lookup(call: ToolCall) -> DeployOutput | None:
        found = ops.lookup(h_of(call), call.idempotency_key)
        if not found["happened"]:
            return None
        return DeployOutput(env=str(found["env"]), commit=str(found["commit"]),
                            idempotency_key=call.idempotency_key, replayed=True)

    def rollback(call: ToolCall) -> DeployOutput:
        args = call.arguments
        assert isinstance(args, RollbackInput)
        h = h_of(call)
        out = DeployOutput.model_validate(ops.rollback(h, args.env, call.idempotency_key,
                                                       dry_run=call.dry_run))
        if args.incident_id and args.fix_id and not call.dry_run:
            # undoing a fix's deploy abandons the fix: its claim goes back
            out.released_fix = release_fix_lock(h, args.incident_id, args.fix_id)
        return out

    def resolve(call: ToolCall) -> ResolveOutput:
        args = call.arguments
        assert isinstance(args, ResolveInput)
        h = h_of(call)
        set_incident_status(h, args.incident_id, "resolved", fix_id=args.fix_id)
        release_fix_lock(h, args.incident_id, args.fix_id)
        return ResolveOutput(incident_id=args.incident_id, status="resolved")

    runtime.register_verifier("infra.incident-resolved", single_verifier(
        root, "incident_resolved"))
    runtime.register_verifier("infra.deployed-commit-matches", single_verifier(
        root, "deployed_commit_matches"))
    runtime.register_verifier("infra.service-healthy", single_verifier(root, "service_healthy"))
    runtime.register_verifier("infra.deploy-verified", deploy_verifier(root))
    runtime.register_verifier("infra.rollback-verified", rollback_verifier(root))
    runtime.register_verifier("infra.resolution-verified", resolution_verifier(root))
    runtime.register_verifier("infra.fix-claimed", fix_verifier(root))

    common: dict[str, Any] = {"version": version, "blast_radius": ("harbor:*",)}
    runtime.register_tool(ToolSpec(
        id="infra.detect_outage", input_model=EnvInput, output_model=ProbeOutput,
        side_effect_class=SideEffectClass.READ_ONLY, idempotency=IdempotencyClass.NATURAL,
        required_scopes=("infra:read",),
        description="probe /health and / of an environment: an observation", **common),
        detect)
    runtime.register_tool(ToolSpec(
        id="infra.run_tests", input_model=TestsInput, output_model=TestsOutput,
        side_effect_class=SideEffectClass.READ_ONLY, idempotency=IdempotencyClass.NATURAL,
        required_scopes=("infra:read",),
        description="the repository's tests on a commit, in a throwaway checkout: an "
                    "observation that never resolves an incident", **common), tests)
    runtime.register_tool(ToolSpec(
        id="infra.claim_fix", input_model=FixInput, output_model=FixOutput,
        side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
        required_scopes=("infra:deploy",), verifier="infra.fix-claimed",
        description="claim an incident's one fix slot (released by rollback or resolution)",
        target_from="harbor:*/incident/{incident_id}", **common), claim)
    runtime.register_tool(ToolSpec(
        id="infra.deploy", input_model=DeployInput, output_model=DeployOutput,
        side_effect_class=SideEffectClass.COMPENSABLE, idempotency=IdempotencyClass.KEYED,
        required_scopes=("infra:deploy",), supports_dry_run=True,
        compensation_tool="infra.rollback", verifier="infra.deploy-verified",
        description="replace what runs in an environment by a commit (keyed)",
        target_from="harbor:*/{env}", **common),
        deploy, lookup=deploy_lookup)
    runtime.register_tool(ToolSpec(
        id="infra.rollback", input_model=RollbackInput, output_model=DeployOutput,
        side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.KEYED,
        required_scopes=("infra:deploy",), supports_dry_run=True,
        verifier="infra.rollback-verified",
        description="put back the previous commit verified in the environment",
        target_from="harbor:*/{env}", **common),
        rollback)
    runtime.register_tool(ToolSpec(
        id="infra.resolve_incident", input_model=ResolveInput, output_model=ResolveOutput,
        side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
        required_scopes=("infra:deploy",), verifier="infra.resolution-verified",
        description="close an incident: only on a verified resolution of its own probe",
        target_from="harbor:*/incident/{incident_id}", **common), resolve)

    changes = "infra.*"
    for name, rule, pattern in (
        ("infra.well-formed-change", rules.well_formed_change, changes),
        ("infra.one-fix-per-incident", rules.one_fix_per_incident, changes),
        ("infra.green-tests-not-resolution", rules.green_tests_not_resolution, changes),
        ("infra.production-runs-verified-commits-only",
         rules.production_runs_verified_commits_only, changes),
    ):
        runtime.register_validator(pattern, _only_changes(rule_validator(root, rule)),
                                   name=name, pack=pack.ref)
    runtime.register_validator("infra.deploy", cited_verification_validator(root),
                               name="infra.cited-staging-verification", pack=pack.ref)


def _only_changes(validator: Validator) -> Validator:
    """The flow rules judge changes; reads (probes, tests) have nothing to break."""
    def check(proposal: Proposal, spec: ToolSpec) -> list[Finding]:
        if proposal.action.action_type not in _KINDS:
            return []
        return validator(proposal, spec)
    return check


# --- the example runner ------------------------------------------------------------------

Step = dict[str, Any]


class _Flow:
    """One governed run of §12 in a world: each step a proposal, each answer recorded."""

    def __init__(self, runtime: Runtime, world: str) -> None:
        self.rt = runtime
        self.world = world
        self.h = harbor_for(Path(runtime.home.root), world)
        self.steps: list[Step] = []
        self.n = 0
        #: tag -> sha of the world's repository (for readable results)
        self.commits: dict[str, str] = {}

    def submit(self, name: str, expect: str, agent: str, tool: str, thing: str,
               arguments: dict[str, Any], environment: str, note: str = "") -> Outcome:
        self.n += 1
        task = f"uh-{self.world}"
        action: dict[str, Any] = {"action_type": tool, "target": target(self.world, thing),
                                  "arguments": arguments, "environment": environment}
        if tool == "infra.deploy" and environment == "production":
            action["risk_level"] = "high"  # a production change: integrity rule 2 applies
        outcome = self.rt.submit({
            "id": f"{task}-{self.n:02d}-{name}", "task_id": task, "agent_id": agent,
            "step": self.n,
            **({"on_behalf_of": RELEASE_MANAGER} if agent != MONITOR else {}),
            "action": action})
        self.record(name, expect, outcome, note)
        return outcome

    def record(self, name: str, expect: str, outcome: Outcome, note: str = "") -> None:
        d = outcome.decision
        stopped = next((c.check for c in d.checks if c.status is CheckStatus.FAIL), None) \
            if d else None
        self.steps.append({
            "step": name, "expected": expect, "outcome": str(outcome.status),
            "ok": str(outcome.status) == expect, "proposal_id": outcome.proposal_id,
            "decision_id": d.id if d else None, "stopped_at": stopped,
            "codes": sorted({r.split(":", 1)[0] for r in outcome.reasons if ":" in r
                             and r.split(":", 1)[0].isidentifier()}),
            "policy_ids": [p.policy_id for p in d.policy_results] if d else [],
            "pack_versions": list(d.pack_versions) if d else [],
            "verification": str(outcome.verification.status) if outcome.verification
            else None,
            "approval_id": outcome.approval.id if outcome.approval else None,
            "reasons": list(outcome.reasons), "note": note,
            "outcome_record": outcome,
        })

    def approve(self, name: str, waiting: Outcome, expect: str, *,
                decision: ApprovalStatus = ApprovalStatus.APPROVED, note: str = "") -> Outcome:
        if waiting.approval is None:
            raise RuntimeError(f"step `{name}`: nothing awaits an approval")
        approval, resumed = self.rt.decide_approval(
            waiting.approval.id, approver_id=ON_CALL, token=EXAMPLE_TOKENS[ON_CALL],
            status=decision, reason=None if decision is ApprovalStatus.APPROVED
            else "not during the freeze")
        if resumed is None:
            resumed = waiting.model_copy(update={
                "status": OutcomeStatus.DENIED if decision is ApprovalStatus.REJECTED
                else OutcomeStatus.REPAIR, "approval": approval,
                "reasons": (f"{decision} by `{ON_CALL}`: {approval.reason}",)})
        self.record(name, expect, resumed, note)
        return resumed


def _incident_from(flow: _Flow, detected: Outcome) -> dict[str, Any] | None:
    """Monitoring opens the incident from the *observation* (its failing probe)."""
    if detected.observation is None or not detected.observation.output.get("outage"):
        return None
    seen = detected.observation.output
    return open_incident(flow.h, str(seen["env"]), seen)


def _deploy(flow: _Flow, name: str, expect: str, incident: Mapping[str, Any], fix_id: str,
            commit: str, env: str, *, agent: str = FIXER, cite: bool = True,
            note: str = "") -> Outcome:
    args: dict[str, Any] = {"env": env, "commit": commit, "incident_id": incident["id"],
                            "fix_id": fix_id}
    if env == "production" and cite:
        proof = staging_resolution(flow.h.snapshot(), commit, str(incident["id"]))
        if proof is not None:
            args["staging_verification"] = proof["id"]
    return flow.submit(name, expect, agent, "infra.deploy", env, args, env, note)


def scenario(runtime: Runtime, *, variant: str = "success", world: str | None = None,
             approve: bool = True, keep_running: bool = False) -> dict[str, Any]:
    """§12 through the governed loop. ``variant``: ``success`` or ``staging_only_fix``."""
    if variant not in ("success", "staging_only_fix"):
        raise ValueError(f"unknown scenario variant `{variant}`")
    ensure_identities(runtime)
    world = world or f"{variant}-{uuid.uuid4().hex[:8]}"
    base = world_dir(Path(runtime.home.root), world)
    h, fx, _ = steps.setup(base)  # the world before the agent (not an agent action)
    flow = _Flow(runtime, world)
    flow.commits = dict(fx.commits)
    try:
        detected = flow.submit("outage detected", "executed", MONITOR, "infra.detect_outage",
                               "production", {"env": "production"}, "production",
                               "a probe observation: /health and / fail")
        incident = _incident_from(flow, detected)
        if incident is None:
            raise RuntimeError("no outage was observed")
        iid = str(incident["id"])
        if variant == "success":
            first = fx["green_not_fixed"]
            flow.submit("claim fix-1", "executed", FIXER, "infra.claim_fix", f"incident/{iid}",
                        {"incident_id": iid, "fix_id": "fix-1", "commit": first}, "local")
            flow.submit("tests of fix-1", "executed", FIXER, "infra.run_tests", "repo",
                        {"commit": first}, "local", "green: an observation, not a resolution")
            flow.submit("resolve on green tests", "denied", FIXER, "infra.resolve_incident",
                        f"incident/{iid}", {"incident_id": iid, "fix_id": "fix-1", "evidence": [
                            {"kind": "test_observation", "ref": "tests-of-fix-1"}]},
                        "production", "green tests ≠ incident resolved")
            _deploy(flow, "staging deploy of fix-1", "verification_failed", incident, "fix-1",
                    first, "staging", note="the incident's probe still fails: rolled back")
        fix = fx["fix"] if variant == "success" else fx["fix_staging_only"]
        flow.submit("claim fix-2", "executed", FIXER, "infra.claim_fix", f"incident/{iid}",
                    {"incident_id": iid, "fix_id": "fix-2", "commit": fix}, "local")
        flow.submit("concurrent fix-3", "denied", FIXER_STAGING_ONLY, "infra.claim_fix",
                    f"incident/{iid}", {"incident_id": iid, "fix_id": "fix-3",
                                        "commit": fx["fix"]}, "local",
                    "one incident, one fix in flight")
        flow.submit("tests of fix-2", "executed", FIXER, "infra.run_tests", "repo",
                    {"commit": fix}, "local")
        _deploy(flow, "staging deploy of fix-2", "executed", incident, "fix-2", fix, "staging",
                note="verified: commit, health, the incident's own probe")
        if variant == "success":
            _deploy(flow, "production, no staging proof", "denied", incident, "fix-2", fix,
                    "production", cite=False, note="production never runs an unverified commit")
            _deploy(flow, "production by staging role", "denied", incident, "fix-2", fix,
                    "production", agent=FIXER_STAGING_ONLY,
                    note="staging verification does not authorize production")
        waiting = _deploy(flow, "production deploy of fix-2", "awaiting_approval", incident,
                          "fix-2", fix, "production",
                          note="explicit permit `production-deploy-explicit` + approval")
        if not approve:
            flow.approve(f"rejected by {ON_CALL}", waiting, "denied",
                         decision=ApprovalStatus.REJECTED)
            return _result(flow, incident)
        expect = "executed" if variant == "success" else "verification_failed"
        done = flow.approve(f"approved by {ON_CALL}", waiting, expect,
                            note="post-deploy: independent probe" if variant == "success"
                            else "post-deploy check fails: compensated by infra.rollback")
        if variant == "success" and done.status is OutcomeStatus.EXECUTED:
            recorded = recorded_resolution(flow.h, "production", fix, iid)
            flow.submit("resolve incident", "executed", FIXER, "infra.resolve_incident",
                        f"incident/{iid}", {"incident_id": iid, "fix_id": "fix-2", "evidence": [
                            {"kind": "verification", "ref": recorded or "none"}]},
                        "production", "the original failing probe passes in production")
        elif done.status is not OutcomeStatus.EXECUTED:
            set_incident_status(flow.h, iid, "escalated",
                                reason="the fix failed its post-deploy verification")
        return _result(flow, incident)
    finally:
        if not keep_running:
            h.envs.stop_all()


def recorded_resolution(h: Harbor, env: str, commit: str, incident_id: str) -> str | None:
    found = [v for v in h.snapshot()["verifications"]
             if v.get("env") == env and v.get("commit") == commit
             and v.get("verifier") == "incident_resolved" and v.get("incident_id") == incident_id
             and v.get("status") == "verified"]
    return str(found[-1]["id"]) if found else None


def _result(flow: _Flow, incident: Mapping[str, Any]) -> dict[str, Any]:
    state = flow.h.snapshot()
    final = state["incidents"].get(incident["id"], {})
    prod = state["envs"].get("production", {})
    tags = {sha: tag for tag, sha in flow.commits.items()}
    return {"world": flow.world, "incident_id": incident["id"],
            "incident_status": final.get("status"),
            "production_commit": tags.get(str(prod.get("commit")), prod.get("commit")),
            "ok": all(s["ok"] for s in flow.steps),
            "steps": flow.steps}


def _validator_example(runtime: Runtime, example: Mapping[str, Any]) -> dict[str, Any]:
    """A rule example's action, proposed through the gates against the example's state."""
    ensure_identities(runtime)
    world = f"{example.get('name', 'example')}-{uuid.uuid4().hex[:8]}"
    h = harbor_for(Path(runtime.home.root), world)
    atomic_write_json(h.store.path, dict(example["state"]))
    action = dict(example["action"])
    kind = action["kind"]
    tool = {v: k for k, v in _KINDS.items()}[kind]
    authorized = (action.get("authorization") or {}).get("decision") == "allow"
    # the governed runtime decides authorization itself: an action the example did not
    # authorize is proposed by an identity without the production role
    agent = FIXER if (authorized or kind != "deploy" or action.get("env") != "production") \
        and action.get("actor") == "harbor-fixer" else FIXER_STAGING_ONLY
    args: dict[str, Any]
    if kind == "propose_fix":
        args = {"incident_id": action["incident_id"], "fix_id": action["fix_id"],
                "commit": action["commit"]}
        thing, env = f"incident/{action['incident_id']}", "local"
    elif kind == "resolve_incident":
        args = {"incident_id": action["incident_id"], "fix_id": action["fix_id"],
                "evidence": action.get("evidence") or []}
        env = str(example["state"]["incidents"][action["incident_id"]]["env"])
        thing = f"incident/{action['incident_id']}"
    else:
        args = {"env": action["env"], "commit": action.get("commit"),
                "incident_id": action.get("incident_id"), "fix_id": action.get("fix_id")}
        proofs = [e["ref"] for e in action.get("evidence") or [] if e["kind"] == "verification"]
        if proofs:
            args["staging_verification"] = proofs[0]
        args = {k: v for k, v in args.items() if v is not None}
        thing, env = str(action["env"]), str(action["env"])
    flow = _Flow(runtime, world)
    flow.submit(str(example.get("name", kind)), "", agent, tool, thing, args, env)
    step = flow.steps[0]
    step.pop("expected")
    step.pop("ok")
    step.pop("outcome_record")
    return {"world": world, **step}


def _live_example(runtime: Runtime, example: Mapping[str, Any]) -> dict[str, Any]:
    """A live example: the incident, a fix deployed (via staging to production), verified."""
    ensure_identities(runtime)
    world = f"{example.get('name', 'live')}-{uuid.uuid4().hex[:8]}"
    h, fx, _ = steps.setup(world_dir(Path(runtime.home.root), world))
    flow = _Flow(runtime, world)
    flow.commits = dict(fx.commits)
    try:
        detected = flow.submit("outage detected", "executed", MONITOR, "infra.detect_outage",
                               "production", {"env": "production"}, "production")
        incident = _incident_from(flow, detected)
        if incident is None:
            raise RuntimeError("no outage was observed")
        iid = str(incident["id"])
        commit = fx[example["deploy"]["commit"]]
        expect = {"verified": "executed", "failed": "verification_failed"}[
            example["expect"]["status"]]
        flow.submit("claim fix", "executed", FIXER, "infra.claim_fix", f"incident/{iid}",
                    {"incident_id": iid, "fix_id": "fix-1", "commit": commit}, "local")
        tests = flow.submit("tests", "executed", FIXER, "infra.run_tests", "repo",
                            {"commit": commit}, "local")
        target_env = example["deploy"]["env"]
        staged = _deploy(flow, "staging deploy", expect if target_env == "staging"
                         else "executed", incident, "fix-1", commit, "staging")
        if target_env == "production" and staged.status is OutcomeStatus.EXECUTED:
            waiting = _deploy(flow, "production deploy", "awaiting_approval", incident,
                              "fix-1", commit, "production")
            flow.approve("approved", waiting, expect)
        out = _result(flow, incident)
        out["tests"] = tests.observation.output.get("outcome") if tests.observation else None
        return out
    finally:
        h.envs.stop_all()


def run_example(runtime: Runtime, payload: Mapping[str, Any]) -> dict[str, Any]:
    """``pack run`` entry: a rule example (``kind: validator``), a live one (``live``), or
    the whole scenario (``kind: scenario``, ``variant``, ``approve``)."""
    kind = payload.get("kind", "scenario")
    if kind == "validator":
        return _jsonable(_validator_example(runtime, payload))
    if kind == "live":
        return _jsonable(_live_example(runtime, payload))
    if kind == "scenario":
        return _jsonable(scenario(runtime, variant=str(payload.get("variant", "success")),
                                  approve=bool(payload.get("approve", True))))
    raise ValueError(f"unknown example kind `{kind}`")


def _jsonable(result: dict[str, Any]) -> dict[str, Any]:
    for step in result.get("steps", []):
        step.pop("outcome_record", None)
    out: dict[str, Any] = json.loads(json.dumps(result, default=str))
    return out


__all__ = ["ENVIRONMENTS", "register", "run_example", "scenario"]
