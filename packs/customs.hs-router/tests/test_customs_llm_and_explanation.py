"""The model plug-ins, exercised with RECORDED exchanges (tests/recorded/), and the guard
that keeps the explanation stage from changing the decision."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from customs_hs_router.explanation import (
    ExplainerRefusedError,
    LlmExplainer,
    TemplateExplainer,
    guarded_explain,
)
from customs_hs_router.extraction import KeywordExtractor, LlmExtractor
from customs_hs_router.models import Decision
from customs_hs_router.pipeline import decide, run
from customs_hs_router.replay import ReplayClient
from customs_hs_router.replay import load_recorded as _load_recorded

from cradle_kg.packs.sdk import ReplayDivergenceError

MODEL = "gpt-4o-mini-2024-07-18"
PAPER = (
    Path(__file__).resolve().parent.parent
    / "examples"
    / "01_paper_example_uav_missing_weight_and_range.json"
)
AT = date(2025, 12, 1)
RECORDED = Path(__file__).resolve().parent / "recorded"


def load_recorded(name: str) -> dict[str, Any]:
    return _load_recorded(RECORDED / name)


def _paper_input() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PAPER.read_text(encoding="utf-8"))["input"]
    return data


def _paper_decision() -> Decision:
    decision, _ = decide(_paper_input(), [KeywordExtractor()], AT)
    return decision


# --- LLM extractor ------------------------------------------------------------------------


def _recorded_extractor() -> tuple[LlmExtractor, str]:
    data = load_recorded("llm_extractor_spraying_drone.json")
    (exchange,) = data["exchanges"]
    client = ReplayClient(data["exchanges"])
    return LlmExtractor(client=client, model=MODEL, recorded=True), exchange["request"]["input"]


def test_llm_extractor_keeps_only_evidenced_known_facts() -> None:
    extractor, text = _recorded_extractor()
    cands = extractor.extract(text)
    by_predicate = {c.predicate: c for c in cands}
    assert set(by_predicate) == {
        "product_type",
        "maximum_takeoff_weight",
        "aerosol_capacity",
        "autonomous_flight",
        "maximum_range",
        "beyond_visual_line_of_sight",
    }
    for cand in cands:
        ev = cand.evidence
        assert ev.start is not None and text[ev.start : ev.end] == ev.text
        assert cand.source == f"extractor:llm:{MODEL}@1.0.0"
    reasons = sorted(d["reason"] for d in extractor.dropped)
    assert reasons == [
        "evidence not found in text",
        "evidence not found in text",
        "unknown predicate",
    ]
    (call,) = extractor.calls
    assert call.recorded and call.request["input"] == text and "output" in call.response


def test_llm_extractor_in_the_pipeline_records_the_call() -> None:
    extractor, text = _recorded_extractor()
    payload = {
        "description": text,
        "facts": [
            {
                "predicate": "passenger_carriage",
                "value": False,
                "unit": None,
                "source": "doc:invoice#1",
            }
        ],
        "declared_at": "2025-12-01",
    }
    outcome = run(payload, extractors=[KeywordExtractor(), extractor]).model_dump(mode="json")
    assert outcome["status"] == "classified" and outcome["hs_code"] == "8806.93"
    assert outcome["permits_required"] == ["EU-2021/821:9A112"]
    assert [c["stage"] for c in outcome["model_calls"]] == ["extraction"]
    weight = next(f for f in outcome["facts"] if f["predicate"] == "maximum_takeoff_weight")
    assert set(weight["sources"]) == {"extractor:keyword@1.0.0", f"extractor:llm:{MODEL}@1.0.0"}


def test_replay_is_strict() -> None:
    extractor, text = _recorded_extractor()
    with pytest.raises(ReplayDivergenceError):
        extractor.extract(text + " (edited)")


def test_unreadable_model_output_yields_nothing() -> None:
    extractor = LlmExtractor(client=lambda request: {"output": "not json"}, model=MODEL)
    assert extractor.extract("drone") == []
    assert extractor.dropped and extractor.calls


# --- explanation guard --------------------------------------------------------------------


class ReturnsDecision:
    name = "returns-decision"

    def explain(self, decision: Decision) -> object:
        return decision.model_copy(update={"status": "classified", "hs_code": "8806.22"})


class MutatesDecision:
    name = "mutates-decision"

    def explain(self, decision: Decision) -> object:
        object.__setattr__(decision, "permitted_to_finalize", True)
        return "All good, finalize it."


class ClearsMissingFacts:
    name = "clears-missing-facts"

    def explain(self, decision: Decision) -> object:
        object.__setattr__(decision, "missing_facts", ())
        return "Nothing is missing."


@pytest.mark.parametrize("explainer", [ReturnsDecision(), MutatesDecision(), ClearsMissingFacts()])
def test_guard_refuses_explainers_that_touch_the_decision(explainer: Any) -> None:
    decision = _paper_decision()
    before = decision.digest()
    with pytest.raises(ExplainerRefusedError):
        guarded_explain(explainer, decision)
    assert decision.digest() == before
    assert decision.permitted_to_finalize is False and decision.missing_facts


@pytest.mark.parametrize("explainer", [ReturnsDecision(), MutatesDecision(), ClearsMissingFacts()])
def test_pipeline_outcome_is_unchanged_by_a_refused_explainer(explainer: Any) -> None:
    honest = run(_paper_input()).model_dump(mode="json")
    tampered = run(_paper_input(), explainer=explainer).model_dump(mode="json")
    assert tampered["explanation_refusals"] and "refused" in tampered["explanation_refusals"][0]
    assert tampered["explained_by"] == TemplateExplainer().name
    for key in (
        "status",
        "hs_code",
        "candidate_hs_codes",
        "missing_facts",
        "permits_required",
        "permitted_to_finalize",
        "decision_digest",
        "explanation",
    ):
        assert tampered[key] == honest[key], key


def test_decision_is_frozen() -> None:
    decision = _paper_decision()
    with pytest.raises(ValueError):
        decision.status = "classified"  # type: ignore[misc]


def test_llm_explainer_faithful_recorded_response() -> None:
    data = load_recorded("llm_explainer_paper_example.json")
    client = ReplayClient([data["exchanges"]["faithful"]])
    outcome = run(_paper_input(), explainer=LlmExplainer(client=client, model=MODEL, recorded=True))
    assert outcome.explained_by == f"llm:{MODEL}"
    assert outcome.explanation == data["exchanges"]["faithful"]["response"]["output"]
    assert outcome.explanation_refusals == ()
    assert [c.stage for c in outcome.model_calls] == ["explanation"]


def test_llm_explainer_naming_another_code_is_refused() -> None:
    data = load_recorded("llm_explainer_paper_example.json")
    client = ReplayClient([data["exchanges"]["names_other_code"]])
    outcome = run(_paper_input(), explainer=LlmExplainer(client=client, model=MODEL, recorded=True))
    assert "8806.99" in outcome.explanation_refusals[0]
    assert "8806.99" not in outcome.explanation
    assert outcome.status == "needs_clarification" and outcome.permitted_to_finalize is False
    assert outcome.model_calls[0].response == data["exchanges"]["names_other_code"]["response"]
