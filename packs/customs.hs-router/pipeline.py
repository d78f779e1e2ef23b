"""The five stages run in order, each with its own module and its own data:

extraction → normalisation → classification → regulatory evaluation → explanation.

``missing_facts`` merges the classification gaps (first) and the regulatory gaps (then),
each in the attribute catalogue order: in the paper's example the take-off weight
discriminates the HS code and the range discriminates the dual-use entry 9A112.

``permitted_to_finalize`` is true only when the goods are classified, the permits were
evaluated under a source in force, no fact is missing and no conflict is unresolved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from pydantic import ValidationError

from .classification import classify
from .explanation import (
    Explainer,
    ExplainerRefusedError,
    LlmExplainer,
    TemplateExplainer,
    guarded_explain,
)
from .extraction import Extractor, KeywordExtractor, LlmExtractor
from .models import (
    CandidateFact,
    Decision,
    GoodsLine,
    LegalSourceRef,
    ModelCall,
    Outcome,
)
from .nomenclature import national_subdivisions
from .normalisation import document_candidates, normalise
from .regulatory import evaluate_permits, select_source


def _rejected(reasons: list[str], at: date | None, **extra: Any) -> Decision:
    return Decision(status="rejected", reasons=tuple(reasons), evaluated_at=at, **extra)


def decide(
    payload: Mapping[str, Any],
    extractors: Sequence[Extractor],
    today: date,
) -> tuple[Decision, list[ModelCall]]:
    """Stages 1 to 4: the formal decision (no explanation yet)."""
    try:
        line = GoodsLine.model_validate(payload)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'payload'}: {e['msg']}" for e in exc.errors()
        ]
        return _rejected([f"invalid goods line: {p}" for p in problems], None), []
    at = line.declared_at or today

    # 1. extraction
    candidates: list[CandidateFact] = document_candidates(line.facts)
    calls: list[ModelCall] = []
    for extractor in extractors:
        seen = len(extractor.calls) if isinstance(extractor, LlmExtractor) else 0
        candidates.extend(extractor.extract(line.description))
        if isinstance(extractor, LlmExtractor):
            calls.extend(extractor.calls[seen:])

    # 2. normalisation
    norm = normalise(candidates)
    common: dict[str, Any] = {
        "facts": tuple(norm.facts),
        "conflicts": tuple(norm.conflicts),
        "product_type": norm.attributes.product_type,
    }
    if norm.errors or norm.unresolved:
        reasons = list(norm.errors) + [
            f"contradictory facts for `{c.predicate}`: "
            + " vs ".join(f"{v.value!r} ({', '.join(v.sources)})" for v in c.values)
            for c in norm.unresolved
            if not any(c.predicate in e for e in norm.errors)
        ]
        return _rejected(reasons, at, **common), calls

    nomenclature = select_source("nomenclature", at)
    if nomenclature is None:
        return _rejected(
            [f"no HS nomenclature in force on {at.isoformat()} (HS 2022 applies from 2022-01-01)"],
            at,
            **common,
        ), calls
    if norm.attributes.product_type is None:
        return _rejected(
            [
                "out of scope: the goods line states no product type of HS "
                "chapter 88 that this pack covers"
            ],
            at,
            **common,
        ), calls

    # 3. classification
    cls = classify(norm.attributes)
    if cls.status == "no_rule":
        return _rejected(
            ["out of scope: no classification rule of this pack applies"],
            at,
            rules=cls.rules,
            legal_sources=(nomenclature.ref(),),
            **common,
        ), calls

    # 4. regulatory evaluation
    reg = evaluate_permits(norm.attributes, cls.candidates, at)
    missing = tuple(dict.fromkeys(cls.missing + reg.missing))
    sources: list[LegalSourceRef] = [nomenclature.ref()] + [s.ref() for s in reg.sources_used]
    subdivisions: tuple[dict[str, str], ...] = ()
    if cls.hs_code is not None:
        national = select_source("national_nomenclature", at)
        if national is not None:
            subdivisions = tuple(national_subdivisions(cls.hs_code))
            if subdivisions:
                sources.append(national.ref())
    classified = cls.status == "classified" and not missing
    permitted = classified and reg.evaluated
    decision = Decision(
        status="classified" if classified else "needs_clarification",
        hs_code=cls.hs_code if classified else None,
        candidate_hs_codes=cls.candidates,
        missing_facts=missing,
        permits_required=reg.permits_required,
        permitted_to_finalize=permitted,
        legal_sources=tuple(sorted(sources, key=lambda s: s.priority)),
        rules=cls.rules + reg.entries,
        national_subdivisions=subdivisions,
        reasons=reg.reasons,
        evaluated_at=at,
        **common,
    )
    return decision, calls


def run(
    payload: Mapping[str, Any],
    *,
    extractors: Sequence[Extractor] | None = None,
    explainer: Explainer | None = None,
    today: date | None = None,
) -> Outcome:
    """All five stages; the explanation cannot alter the decision (see ``explanation``)."""
    decision, calls = decide(payload, extractors or (KeywordExtractor(),), today or date.today())
    chosen: Explainer = explainer or TemplateExplainer()
    refusals: list[str] = []
    seen_explainer = len(explainer.calls) if isinstance(explainer, LlmExplainer) else 0
    try:
        text = guarded_explain(chosen, decision)
    except ExplainerRefusedError as exc:
        refusals.append(exc.message)
        chosen = TemplateExplainer()
        text = guarded_explain(chosen, decision)
    if isinstance(explainer, LlmExplainer):
        calls.extend(explainer.calls[seen_explainer:])
    return Outcome(
        **decision.model_dump(),
        decision_digest=decision.digest(),
        explanation=text,
        explained_by=chosen.name,
        explanation_refusals=tuple(refusals),
        model_calls=tuple(calls),
    )
