"""customs.hs-router's contributions to the governed runtime, as declarations.

The manifest names each of them; loading the pack registers them (no registration code):

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
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cradle_kg.packs.sdk import (
    Action,
    FactCheck,
    Finding,
    IdempotencyClass,
    PackContext,
    Proposal,
    SideEffectClass,
    ToolCall,
    ToolSpec,
    Verdict,
    Verifier,
    VerifierReport,
    VerifyRequest,
    check,
    content_hash,
    invariant,
    read_back,
    report,
    tool,
    validator,
    verifier,
)

from .declarations import Declarations
from .models import Decision
from .models import Outcome as ClassificationOutcome
from .tools.hs import hs_lookup
from .validators.goods_line import validate_goods_line
from .verifiers.hs import hs_code_exists, legal_source_current, required_permit_resolution

# the pipeline (extraction, classification, regulatory evaluation, explanation) is imported
# where a goods line is decided, not with the pack: `tools list` imports this module

TOOL_LOOKUP = "customs.hs_lookup"
TOOL_CLASSIFY = "customs.classify"
TOOL_FINALIZE = "customs.finalize_classification"
VERIFIER_FILED = "customs.declaration-recorded"
_OB = "https://w3id.org/cradle/observed#"
#: the postcondition of a filing, as SHACL over the verifier's read-back (gate 2)
FILED_AS_ASKED = f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
<https://w3id.org/cradle/pack/customs#FiledAsAsked> a sh:NodeShape ;
    sh:targetNode <urn:cradle:observed> ;
    sh:sparql [ sh:message "the declaration read back is not the one asked (id, HS code, digest)" ;
        sh:select \"\"\"SELECT $this WHERE {{
            <urn:cradle:arguments> <{_OB}declaration_id> ?id ; <{_OB}hs_code> ?code ;
                                   <{_OB}decision_digest> ?digest .
            FILTER NOT EXISTS {{ $this <{_OB}declaration_id> ?id ; <{_OB}hs_code> ?code ;
                                       <{_OB}decision_digest> ?digest }} }}\"\"\" ] .
"""


# --- contracts ---------------------------------------------------------------------------

class _In(BaseModel):
    # built by pydantic on first use, not when the pack is imported (`tools list`)
    model_config = ConfigDict(extra="forbid", defer_build=True)


class LookupInput(_In):
    code: str = Field(min_length=1, max_length=16)


class LookupOutput(BaseModel):
    model_config = ConfigDict(defer_build=True)
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
    model_config = ConfigDict(defer_build=True)
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
    from .extraction import KeywordExtractor
    from .pipeline import decide

    decision, _calls = decide(goods_line, (KeywordExtractor(),), date.today())
    with _PRECHECK_LOCK:
        if len(_PRECHECK) > 512:
            _PRECHECK.clear()
        _PRECHECK[key] = decision
    return decision


def _line(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if v is not None}



# --- validators (gate 1) -----------------------------------------------------------------

@validator(TOOL_CLASSIFY, name="customs.goods-line-well-formed")
def goods_line_well_formed(ctx: PackContext, proposal: Proposal, spec: ToolSpec
                           ) -> list[Finding]:
    """Closed world: a goods line the pack's model refuses is denied before anything runs."""
    problems = validate_goods_line(_line(proposal.action.arguments))
    return [Finding(code="malformed_goods_line", message=f"goods line: {p}") for p in problems]


@validator(TOOL_CLASSIFY, name="customs.classification-precheck")
def classification_precheck(ctx: PackContext, proposal: Proposal, spec: ToolSpec
                            ) -> list[Finding]:
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
                        data=(("candidate_hs_codes", list(decision.candidate_hs_codes)),
                              ("product_type", decision.product_type)),
                        message=f"needs clarification: {missing} unknown; never a guess "
                                f"(candidate HS codes: {candidates})")]
    return []


@validator(TOOL_FINALIZE, name="customs.finalize-matches-classification")
def finalize_matches_classification(ctx: PackContext, proposal: Proposal, spec: ToolSpec
                                    ) -> list[Finding]:
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


def store_for(ctx: PackContext) -> Declarations:
    return Declarations(ctx.home / "customs" / "declarations.sqlite")


def _filed_checks(ctx: PackContext, req: VerifyRequest,
                  names: tuple[str, ...]) -> VerifierReport:
    """Read the filed row back (own connection) and re-check what was filed."""
    args = req.arguments
    assert isinstance(args, FinalizeInput)
    row = store_for(ctx).read(req.action.idempotency_key)
    read_at = ctx.clock()
    if row is None:
        return report(read_back(False, False, exists_detail="no declaration filed under "
                                "this key", state_detail="nothing to compare"),
                      read_at=read_at, evidence={"row": None}, source="declarations.sqlite",
                      changed=[])
    same = (row["declaration_id"] == args.declaration_id and row["hs_code"] == args.hs_code
            and row["permits_required"] == sorted(args.permits_required)
            and row["decision_digest"] == args.decision_digest)
    checks = [*read_back(True, same, exists_detail=f"declaration `{row['declaration_id']}` "
                         "filed", state_detail=f"filed `{row['hs_code']}` permits "
                                               f"{row['permits_required']} digest "
                                               f"{row['decision_digest'][:19]}…")]
    for name in names:
        status, detail = PACK_VERIFIERS[name](row["outcome"])
        checks.append(check(name, status, detail))
    evidence = {k: v for k, v in row.items() if k != "outcome"}
    filed = {str(f["predicate"]): f["value"] for f in row["outcome"].get("facts") or ()}
    evidence["facts"] = filed
    return report(checks, read_at=read_at, evidence=evidence, source="declarations.sqlite",
                  changed=[f"declaration:{row['declaration_id']}"],
                  facts=_fact_checks(req, filed))


def _fact_checks(req: VerifyRequest, filed: Mapping[str, Any]) -> list[FactCheck]:
    """Each candidate fact of the filing against the facts the filed classification rests
    on (read back): the same value confirms it, another value contradicts it."""
    out = []
    for index, fact in enumerate(req.facts):
        if fact.predicate not in filed:
            continue
        same = filed[fact.predicate] == fact.object
        out.append(FactCheck(fact=index, status="verified" if same else "contradicted",
                             detail=f"filed `{fact.predicate}` = `{filed[fact.predicate]}`"))
    return out


def _filed(verifier_id: str, names: tuple[str, ...]) -> Verifier:
    return verifier(verifier_id)(lambda ctx, req: _filed_checks(ctx, req, names))


declaration_recorded = _filed(VERIFIER_FILED, tuple(PACK_VERIFIERS))
filed_hs_code_exists = _filed("customs.hs-code-exists", ("hs-code-exists",))
filed_legal_source_current = _filed("customs.legal-source-current", ("legal-source-current",))
filed_required_permit_resolution = _filed("customs.required-permit-resolution",
                                          ("required-permit-resolution",))


# --- domain invariants (gate 2) ------------------------------------------------------------

@invariant(TOOL_FINALIZE, name="customs.filed-code-is-a-subheading")
def filed_code_is_a_subheading(ctx: PackContext, action: Action,
                               output: BaseModel | None) -> list[str]:
    """What was filed is an HS 2022 subheading, the code and digest the proposal carried."""
    if not isinstance(output, FinalizeOutput):
        return ["the filing reported no declaration to check"]
    broken = []
    found = hs_lookup(output.hs_code)
    if not found["exists"] or len(str(found["code"]).replace(".", "")) != 6:
        broken.append(f"`{output.hs_code}` is not an HS 2022 subheading")
    for name in ("hs_code", "decision_digest", "declaration_id"):
        if getattr(output, name) != action.arguments.get(name):
            broken.append(f"filed `{name}` differs from the one asked")
    return broken


# --- tools -------------------------------------------------------------------------------

def _args(call: ToolCall, model: type[BaseModel]) -> Any:
    args = call.arguments
    assert isinstance(args, model)
    return args


@tool(TOOL_LOOKUP, input_model=LookupInput, output_model=LookupOutput,
      side_effect_class=SideEffectClass.READ_ONLY, idempotency=IdempotencyClass.NATURAL,
      blast_radius=("hs:*",),
      description="read the HS 2022 nomenclature (exists, description, parents)")
def lookup(ctx: PackContext, call: ToolCall) -> LookupOutput:
    args: LookupInput = _args(call, LookupInput)
    return LookupOutput.model_validate(hs_lookup(args.code))


@tool(TOOL_CLASSIFY, input_model=GoodsLineInput, output_model=ClassificationOutcome,
      side_effect_class=SideEffectClass.READ_ONLY, idempotency=IdempotencyClass.NATURAL,
      blast_radius=("goods-line:*",),
      description="classify one goods line: extraction, normalisation, classification, "
                  "regulatory evaluation, explanation (computes; writes nothing)")
def classify(ctx: PackContext, call: ToolCall) -> ClassificationOutcome:
    from .pipeline import run

    args: GoodsLineInput = _args(call, GoodsLineInput)
    return run(args.model_dump(exclude_none=True))


def finalize_lookup(ctx: PackContext, call: ToolCall) -> FinalizeOutput | None:
    row = store_for(ctx).read(call.idempotency_key)
    if row is None:
        return None
    return FinalizeOutput(declaration_id=row["declaration_id"], hs_code=row["hs_code"],
                          permits_required=row["permits_required"],
                          decision_digest=row["decision_digest"], written=True)


@tool(TOOL_FINALIZE, input_model=FinalizeInput, output_model=FinalizeOutput,
      side_effect_class=SideEffectClass.EXTERNAL_WRITE, idempotency=IdempotencyClass.KEYED,
      verifier=VERIFIER_FILED, blast_radius=("declaration:{declaration_id}",),
      postconditions=(FILED_AS_ASKED,),
      target_from="declaration:{declaration_id}", lookup=finalize_lookup,
      description="file a classification in the declarations store (keyed write)")
def finalize(ctx: PackContext, call: ToolCall) -> FinalizeOutput:
    from .pipeline import run

    args: FinalizeInput = _args(call, FinalizeInput)
    outcome = run(args.goods_line.model_dump(exclude_none=True))
    if outcome.status != "classified" or outcome.hs_code is None:
        raise ValueError(f"cannot file a `{outcome.status}` classification")
    written = store_for(ctx).file(
        key=call.idempotency_key, declaration_id=args.declaration_id, hs_code=outcome.hs_code,
        permits=list(outcome.permits_required), decision_digest=outcome.decision_digest,
        outcome=outcome.model_dump(mode="json"))
    return FinalizeOutput(declaration_id=args.declaration_id, hs_code=outcome.hs_code,
                          permits_required=sorted(outcome.permits_required),
                          decision_digest=outcome.decision_digest, written=written)
