"""customs.hs-router in the governed runtime: tools, verifiers, validators, example runner.

``register(runtime, pack)`` (the manifest's ``runtime:`` hook) wraps the pack's plain
functions as core contracts:

=================================  ==============  ==========  ================================
tool                               side effect     idempotency verifier (gate 2)
=================================  ==============  ==========  ================================
``customs.hs_lookup``              read_only       natural     — (an observation)
``customs.classify``               read_only       natural     — (an observation)
``customs.finalize_classification`` external_write keyed       ``customs.declaration-recorded``
=================================  ==============  ==========  ================================

Where ``needs_clarification`` comes from (the choice, stated once): the classification is
deterministic, so gate 1 runs it as a **domain pre-check** on every ``customs.classify``
proposal (validator ``customs.classification-precheck``). An unknown discriminating
attribute is a ``clarify`` finding whose ``missing_facts`` are the pack's, in the pack's
order — the runtime outcome is ``needs_clarification`` and nothing runs; a rejected goods
line is a ``deny``. Only a goods line the pack can decide reaches the tool, whose output
is an observation (data, not truth).

Finalizing is the governed write: a keyed row in the local declarations store
(``declarations.py``). Its proposal carries the classification's claims (status,
``permitted_to_finalize``, permit and missing-fact counts, decision digest) — Cedar reads
them (``missing-attribute-escalation`` forbids, ``restricted-goods-routing`` asks for a
human approval) and the validator ``customs.finalize-matches-classification`` recomputes
the classification and denies any claim that differs, so an agent cannot talk Cedar into
a permit. Gate 2 reads the row back through its own connection and re-runs the pack's
three verifiers on what was filed: ``hs-code-exists``, ``legal-source-current``,
``required-permit-resolution`` (each also registered alone).

``run_example(runtime, input)`` (the manifest's ``example_runner``) submits the
classification and, when it executed, the finalization; it returns the pack-level result
and the governed outcomes behind it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cradle_kg.canonical import content_hash
from cradle_kg.config import Approver, RuntimeConfig
from cradle_kg.loop.approvals import token_hash
from cradle_kg.loop.gate1.findings import Finding
from cradle_kg.records import (
    Agent,
    ApprovalStatus,
    IdempotencyClass,
    Outcome,
    OutcomeStatus,
    Permission,
    Proposal,
    SideEffectClass,
    Verdict,
    VerificationCheck,
    VerificationStatus,
)
from cradle_kg.tools import ToolCall, ToolSpec
from cradle_kg.verifiers import VerifierReport, VerifyRequest

from .declarations import Declarations
from .extraction import KeywordExtractor
from .models import Decision
from .models import Outcome as ClassificationOutcome
from .pipeline import decide, run
from .tools.hs import hs_lookup
from .validators.goods_line import validate_goods_line
from .verifiers.hs import hs_code_exists, legal_source_current, required_permit_resolution

if TYPE_CHECKING:
    from cradle_kg import Runtime
    from cradle_kg.packs.loader import Pack

V = VerificationStatus

#: the example identities: a broker agent acting for a declarant; a customs officer
#: approves restricted-goods finalizations. Tokens are example-only.
AGENT = "agent:customs-broker"
DECLARANT = "user:declarant"
OFFICER = "user:customs-officer"
EXAMPLE_TOKENS = {OFFICER: "example-token-customs-officer"}
ENVIRONMENT = "local"

TOOL_LOOKUP = "customs.hs_lookup"
TOOL_CLASSIFY = "customs.classify"
TOOL_FINALIZE = "customs.finalize_classification"
VERIFIER_FILED = "customs.declaration-recorded"


# --- contracts ---------------------------------------------------------------------------

class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LookupInput(_In):
    code: str = Field(min_length=1, max_length=16)


class LookupOutput(BaseModel):
    code: str
    exists: bool
    description: str | None = None
    level: int | None = None
    section: str | None = None
    parent_chain: list[dict[str, Any]] = []
    national_subdivisions: list[Any] = []
    source: str | None = None


class GoodsLineInput(_In):
    """One goods line (README "Input"); the pack's own model checks the details."""

    description: str
    facts: list[dict[str, Any]] = []
    declared_at: str | None = None


class FinalizeInput(_In):
    """The agent's claims about a classification it asks to file, with the goods line.

    The flat fields are what Cedar reads (``context.arguments``); gate 1's validator
    recomputes every one of them from ``goods_line``.
    """

    declaration_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    goods_line: GoodsLineInput
    status: Literal["classified", "needs_clarification", "rejected"]
    hs_code: str | None = None
    permitted_to_finalize: bool
    permits_required: list[str] = []
    permits_required_count: int = Field(ge=0)
    missing_facts_count: int = Field(ge=0)
    decision_digest: str


class FinalizeOutput(BaseModel):
    declaration_id: str
    hs_code: str
    permits_required: list[str]
    decision_digest: str
    written: bool


# --- the deterministic pre-check (stages 1-4, no model, no explanation) -------------------

_PRECHECK_LOCK = threading.Lock()
_PRECHECK: dict[str, Decision] = {}


def precheck(goods_line: Mapping[str, Any]) -> Decision:
    """The pack's decision for a goods line, as gate 1 sees it (memoized per day)."""
    key = content_hash([dict(goods_line), date.today().isoformat()])
    with _PRECHECK_LOCK:
        found = _PRECHECK.get(key)
    if found is not None:
        return found
    decision, _calls = decide(goods_line, (KeywordExtractor(),), date.today())
    with _PRECHECK_LOCK:
        if len(_PRECHECK) > 512:
            _PRECHECK.clear()
        _PRECHECK[key] = decision
    return decision


def _line(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if v is not None}


# --- validators (gate 1) -----------------------------------------------------------------

def goods_line_well_formed(proposal: Proposal, spec: ToolSpec) -> list[Finding]:
    """Closed world: a goods line the pack's model refuses is denied before anything runs."""
    problems = validate_goods_line(_line(proposal.action.arguments))
    return [Finding(code="malformed_goods_line", message=f"goods line: {p}") for p in problems]


def classification_precheck(proposal: Proposal, spec: ToolSpec) -> list[Finding]:
    """Unknown discriminating attributes ⇒ clarify with the pack's missing facts, in order."""
    decision = precheck(_line(proposal.action.arguments))
    if decision.status == "rejected":
        return [Finding(code="classification_rejected",
                        message="rejected by the pack: " + "; ".join(decision.reasons))]
    if decision.status == "needs_clarification":
        missing = ", ".join(f"`{m}`" for m in decision.missing_facts)
        candidates = ", ".join(decision.candidate_hs_codes) or "none"
        return [Finding(code="missing_facts", verdict=Verdict.CLARIFY,
                        missing_facts=decision.missing_facts,
                        message=f"needs clarification: {missing} unknown; never a guess "
                                f"(candidate HS codes: {candidates})")]
    return []


def finalize_matches_classification(proposal: Proposal, spec: ToolSpec) -> list[Finding]:
    """The claims Cedar read must be the pack's own decision for this goods line."""
    args = FinalizeInput.model_validate(proposal.action.arguments)
    decision = precheck(args.goods_line.model_dump(exclude_none=True))
    expected: dict[str, Any] = {
        "status": decision.status, "hs_code": decision.hs_code,
        "permitted_to_finalize": decision.permitted_to_finalize,
        "permits_required": sorted(decision.permits_required),
        "permits_required_count": len(decision.permits_required),
        "missing_facts_count": len(decision.missing_facts),
        "decision_digest": decision.digest(),
    }
    claimed = args.model_dump()
    claimed["permits_required"] = sorted(args.permits_required)
    wrong = [k for k, v in expected.items() if claimed[k] != v]
    if wrong:
        detail = "; ".join(f"`{k}` claimed {claimed[k]!r}, the pack decides {expected[k]!r}"
                           for k in wrong)
        return [Finding(code="claims_do_not_match_classification",
                        message=f"the finalization's claims differ from the classification: "
                                f"{detail}")]
    return []


# --- verifiers (gate 2) ------------------------------------------------------------------

_STATUS = {"verified": V.VERIFIED, "failed": V.FAILED, "inconclusive": V.INCONCLUSIVE}
PackVerifier = Callable[[Mapping[str, Any]], tuple[str, str]]


def _legal_source_current(outcome: Mapping[str, Any]) -> tuple[str, str]:
    at = outcome.get("evaluated_at")
    if not at:
        return "inconclusive", "the outcome states no evaluation date"
    return legal_source_current(outcome, date.fromisoformat(str(at)))


PACK_VERIFIERS: dict[str, PackVerifier] = {
    "hs-code-exists": hs_code_exists,
    "legal-source-current": _legal_source_current,
    "required-permit-resolution": required_permit_resolution,
}


def _filed_checks(store: Declarations, req: VerifyRequest,
                  names: tuple[str, ...]) -> VerifierReport:
    """Read the filed row back (own connection) and re-check what was filed."""
    args = req.arguments
    assert isinstance(args, FinalizeInput)
    row = store.read(req.action.idempotency_key)
    read_at = datetime.now(UTC)
    if row is None:
        return VerifierReport(
            checks=(VerificationCheck(name="resource_exists", status=V.FAILED,
                                      detail="no declaration filed under this key"),
                    VerificationCheck(name="expected_state", status=V.FAILED,
                                      detail="nothing to compare")),
            read_at=read_at, evidence={"row": None}, source="declarations.sqlite")
    same = (row["declaration_id"] == args.declaration_id and row["hs_code"] == args.hs_code
            and row["permits_required"] == sorted(args.permits_required)
            and row["decision_digest"] == args.decision_digest)
    checks = [VerificationCheck(name="resource_exists", status=V.VERIFIED,
                                detail=f"declaration `{row['declaration_id']}` filed"),
              VerificationCheck(name="expected_state", status=V.VERIFIED if same else V.FAILED,
                                detail=f"filed `{row['hs_code']}` permits "
                                       f"{row['permits_required']} digest "
                                       f"{row['decision_digest'][:19]}…")]
    for name in names:
        status, detail = PACK_VERIFIERS[name](row["outcome"])
        checks.append(VerificationCheck(name=name, status=_STATUS[status], detail=detail))
    evidence = {k: v for k, v in row.items() if k != "outcome"}
    return VerifierReport(checks=tuple(checks), read_at=read_at, evidence=evidence,
                          source="declarations.sqlite")


# --- identities (example and demo only; a real home configures its own) -------------------

def identities() -> RuntimeConfig:
    """The agents, permissions and approvers the examples use."""
    return RuntimeConfig(
        agents=(Agent(id=AGENT, role="customs-broker", acts_for=DECLARANT,
                      environments=(ENVIRONMENT,)),),
        permissions=(Permission(subject=AGENT, action_type="customs.*",
                                resource_selector="*"),),
        approvers=(Approver(id=OFFICER, role="customs-officer",
                            scopes=("dual_use_export_control",),
                            token_hash=token_hash(EXAMPLE_TOKENS[OFFICER])),),
    )


def merged(base: RuntimeConfig, extra: RuntimeConfig) -> RuntimeConfig:
    """``base`` plus what ``extra`` declares and ``base`` does not (by id)."""
    return base.merged_with(extra)


def ensure_identities(runtime: Runtime) -> None:
    if runtime.config.agent(AGENT) is None:
        runtime.configure(merged(runtime.config, identities()))


# --- registration ------------------------------------------------------------------------

def store_for(runtime: Runtime) -> Declarations:
    return Declarations(Path(runtime.home.root) / "customs" / "declarations.sqlite")


def register(runtime: Runtime, pack: Pack) -> None:
    """The manifest's ``runtime:`` hook."""
    store = store_for(runtime)
    name = pack.ref

    def lookup_tool(call: ToolCall) -> LookupOutput:
        args = call.arguments
        assert isinstance(args, LookupInput)
        return LookupOutput.model_validate(hs_lookup(args.code))

    def classify_tool(call: ToolCall) -> ClassificationOutcome:
        args = call.arguments
        assert isinstance(args, GoodsLineInput)
        return run(args.model_dump(exclude_none=True))

    def finalize_tool(call: ToolCall) -> FinalizeOutput:
        args = call.arguments
        assert isinstance(args, FinalizeInput)
        outcome = run(args.goods_line.model_dump(exclude_none=True))
        if outcome.status != "classified" or outcome.hs_code is None:
            raise ValueError(f"cannot file a `{outcome.status}` classification")
        written = store.file(key=call.idempotency_key, declaration_id=args.declaration_id,
                             hs_code=outcome.hs_code, permits=list(outcome.permits_required),
                             decision_digest=outcome.decision_digest,
                             outcome=outcome.model_dump(mode="json"))
        return FinalizeOutput(declaration_id=args.declaration_id, hs_code=outcome.hs_code,
                              permits_required=sorted(outcome.permits_required),
                              decision_digest=outcome.decision_digest, written=written)

    def finalize_lookup(call: ToolCall) -> FinalizeOutput | None:
        row = store.read(call.idempotency_key)
        if row is None:
            return None
        return FinalizeOutput(declaration_id=row["declaration_id"], hs_code=row["hs_code"],
                              permits_required=row["permits_required"],
                              decision_digest=row["decision_digest"], written=True)

    def verifier(names: tuple[str, ...]) -> Callable[[VerifyRequest], VerifierReport]:
        return lambda req: _filed_checks(store, req, names)

    for check in PACK_VERIFIERS:
        runtime.register_verifier(f"customs.{check}", verifier((check,)))
    runtime.register_verifier(VERIFIER_FILED, verifier(tuple(PACK_VERIFIERS)))

    runtime.register_tool(ToolSpec(
        id=TOOL_LOOKUP, version=pack.version, input_model=LookupInput,
        output_model=LookupOutput, side_effect_class=SideEffectClass.READ_ONLY,
        idempotency=IdempotencyClass.NATURAL, blast_radius=("hs:*",),
        description="read the HS 2022 nomenclature (exists, description, parents)"),
        lookup_tool)
    runtime.register_tool(ToolSpec(
        id=TOOL_CLASSIFY, version=pack.version, input_model=GoodsLineInput,
        output_model=ClassificationOutcome, side_effect_class=SideEffectClass.READ_ONLY,
        idempotency=IdempotencyClass.NATURAL, blast_radius=("goods-line:*",),
        description="classify one goods line: extraction, normalisation, classification, "
                    "regulatory evaluation, explanation (computes; writes nothing)"),
        classify_tool)
    runtime.register_tool(ToolSpec(
        id=TOOL_FINALIZE, version=pack.version, input_model=FinalizeInput,
        output_model=FinalizeOutput, side_effect_class=SideEffectClass.EXTERNAL_WRITE,
        idempotency=IdempotencyClass.KEYED, verifier=VERIFIER_FILED,
        blast_radius=("declaration:*",), target_from="declaration:{declaration_id}",
        description="file a classification in the declarations store (keyed write)"),
        finalize_tool, lookup=finalize_lookup)

    runtime.register_validator(TOOL_CLASSIFY, goods_line_well_formed,
                               name="customs.goods-line-well-formed", pack=name)
    runtime.register_validator(TOOL_CLASSIFY, classification_precheck,
                               name="customs.classification-precheck", pack=name)
    runtime.register_validator(TOOL_FINALIZE, finalize_matches_classification,
                               name="customs.finalize-matches-classification", pack=name)


# --- the example runner ------------------------------------------------------------------

def _summary(outcome: Outcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    d = outcome.decision
    return {
        "outcome": str(outcome.status),
        "proposal_id": outcome.proposal_id,
        "decision_id": d.id if d else None,
        "verdict": str(d.verdict) if d else None,
        "reasons": list(outcome.reasons),
        "missing_facts": list(d.missing_facts) if d else [],
        "policy_ids": [p.policy_id for p in d.policy_results] if d else [],
        "policy_version": d.policy_version if d else None,
        "pack_versions": list(d.pack_versions) if d else [],
        "approval_id": outcome.approval.id if outcome.approval else None,
        "verification": str(outcome.verification.status) if outcome.verification else None,
        "replayed": outcome.replayed,
    }


def classify_proposal(line: Mapping[str, Any], *, task: str) -> dict[str, Any]:
    return {"id": f"{task}-classify", "task_id": task, "agent_id": AGENT,
            "on_behalf_of": DECLARANT,
            "action": {"action_type": TOOL_CLASSIFY, "target": f"goods-line:{task}",
                       "arguments": dict(line), "environment": ENVIRONMENT}}


def finalize_proposal(line: Mapping[str, Any], result: Mapping[str, Any], *, task: str,
                      declaration_id: str) -> dict[str, Any]:
    """The agent files what the classification observation says, claims and all."""
    permits = sorted(result.get("permits_required") or [])
    arguments = {
        "declaration_id": declaration_id, "goods_line": dict(line),
        "status": result["status"], "hs_code": result.get("hs_code"),
        "permitted_to_finalize": bool(result.get("permitted_to_finalize")),
        "permits_required": permits, "permits_required_count": len(permits),
        "missing_facts_count": len(result.get("missing_facts") or []),
        "decision_digest": result["decision_digest"],
    }
    action: dict[str, Any] = {"action_type": TOOL_FINALIZE,
                              "target": f"declaration:{declaration_id}",
                              "arguments": arguments, "environment": ENVIRONMENT}
    if permits:
        action["risk_level"] = "high"  # export-controlled goods: integrity rule 2 applies
    return {"id": f"{task}-finalize", "task_id": task, "agent_id": AGENT,
            "on_behalf_of": DECLARANT, "action": action}


_FIELDS = ("status", "hs_code", "candidate_hs_codes", "product_type", "missing_facts",
           "permits_required", "permitted_to_finalize")


def run_example(runtime: Runtime, payload: Mapping[str, Any]) -> dict[str, Any]:
    """One goods line through the governed loop: classify, then (if it ran) finalize.

    ``payload`` is a goods line (``description``, ``facts``, ``declared_at``) with optional
    ``task`` (the run's task id), ``declaration_id`` and ``finalize`` (default true).
    """
    return governed_line(runtime, payload)[0]


def governed_line(runtime: Runtime, payload: Mapping[str, Any]
                  ) -> tuple[dict[str, Any], Outcome, Outcome | None]:
    """``run_example``'s result, with the classify and finalize outcomes themselves."""
    ensure_identities(runtime)
    line = {k: payload[k] for k in ("description", "facts", "declared_at") if k in payload}
    task = str(payload.get("task") or "customs-" + content_hash(line)[7:19])
    declaration_id = str(payload.get("declaration_id") or "decl-" + task.removeprefix(
        "customs-"))
    classified = runtime.submit(classify_proposal(line, task=task))
    finalized: Outcome | None = None
    result: dict[str, Any]
    if classified.status is OutcomeStatus.EXECUTED and classified.observation is not None:
        observed = dict(classified.observation.output)
        result = {k: observed.get(k) for k in _FIELDS}
        result["decision_digest"] = observed.get("decision_digest")
        if payload.get("finalize", True):
            finalized = runtime.submit(finalize_proposal(line, observed, task=task,
                                                         declaration_id=declaration_id))
    else:
        # gate 1 stopped it: the runtime's decision is the answer; the descriptive fields
        # (candidates, product type) are the same deterministic pre-check the gate ran
        gate = precheck(line)
        decision = classified.decision
        missing = list(decision.missing_facts) if decision else []
        if classified.status is OutcomeStatus.NEEDS_CLARIFICATION and missing != list(
                gate.missing_facts):
            raise RuntimeError(f"the gate's missing facts {missing} differ from the pack's "
                               f"{list(gate.missing_facts)}")
        status = {OutcomeStatus.NEEDS_CLARIFICATION: "needs_clarification",
                  OutcomeStatus.DENIED: "rejected"}.get(classified.status,
                                                        str(classified.status))
        result = {"status": status, "hs_code": None,
                  "candidate_hs_codes": list(gate.candidate_hs_codes),
                  "product_type": gate.product_type, "missing_facts": missing,
                  "permits_required": list(gate.permits_required),
                  "permitted_to_finalize": False, "decision_digest": None}
    result.update({
        "pack": next((p for p in runtime.pack_versions if p.startswith("customs.hs-router@")),
                     None),
        "run_id": classified.run_id,
        "declaration_id": declaration_id if finalized is not None else None,
        "finalized": finalized is not None and finalized.status is OutcomeStatus.EXECUTED,
        "governed": {"classify": _summary(classified), "finalize": _summary(finalized)},
    })
    return result, classified, finalized


def approve_finalization(runtime: Runtime, waiting: Outcome, *, approver: str = OFFICER,
                         token: str | None = None) -> Outcome:
    """A second identity (the customs officer) approves a restricted-goods filing."""
    if waiting.approval is None:
        raise ValueError("this finalization does not await an approval")
    _approval, resumed = runtime.decide_approval(
        waiting.approval.id, approver_id=approver,
        token=token if token is not None else EXAMPLE_TOKENS[approver],
        status=ApprovalStatus.APPROVED)
    if resumed is None:
        raise RuntimeError("the approved finalization did not resume")
    return resumed

