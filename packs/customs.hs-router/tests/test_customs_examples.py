"""Every example runs end to end; its expected subset must match and every outcome must
pass the pack's own validators and verifiers."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from customs_hs_router.models import Decision
from customs_hs_router.nomenclature import default_nomenclature
from customs_hs_router.tools.hs import classify_goods_line
from customs_hs_router.validators.outcome_graph import validate_outcome_graph
from customs_hs_router.verifiers.hs import (
    hs_code_exists,
    legal_source_current,
    required_permit_resolution,
)

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _run(path: Path) -> dict[str, Any]:
    return classify_goods_line(_load(path)["input"])


def test_there_are_enough_examples() -> None:
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_matches_expected(path: Path) -> None:
    expected = _load(path)["expect"]
    outcome = _run(path)
    for key, want in expected.items():
        if key == "conflicts":
            got = [{k: c[k] for k in ("predicate", "resolution", "chosen")} for c in outcome[key]]
        else:
            got = outcome[key]
        assert got == want, f"{key}: {got!r} != {want!r}\n{outcome['reasons']}"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_outcome_is_consistent(path: Path) -> None:
    outcome = _run(path)
    nomenclature = default_nomenclature()
    emitted = list(outcome["candidate_hs_codes"]) + (
        [outcome["hs_code"]] if outcome["hs_code"] else []
    )
    for code in emitted:
        entry = nomenclature.get(code)
        assert entry is not None and entry.level == 6 and code[4] == "."
    assert (outcome["hs_code"] is None) == (outcome["status"] != "classified")
    if outcome["permitted_to_finalize"]:
        assert outcome["status"] == "classified" and not outcome["missing_facts"]
    decision = Decision(**{k: outcome[k] for k in Decision.model_fields})
    assert decision.digest() == outcome["decision_digest"]
    assert hs_code_exists(outcome)[0] != "failed"
    conforms, report = validate_outcome_graph(outcome)
    assert conforms, report
    if outcome["legal_sources"]:
        at = date.fromisoformat(outcome["evaluated_at"])
        assert legal_source_current(outcome, at)[0] == "verified"
    status, detail = required_permit_resolution(outcome)
    assert status != "failed", detail
    if outcome["status"] == "classified" and outcome["hs_code"].startswith("8806"):
        assert status == "verified", detail


def test_every_fact_carries_sources_and_evidence() -> None:
    outcome = _run(EXAMPLES[0])
    assert outcome["facts"]
    for fact in outcome["facts"]:
        assert fact["sources"] and fact["evidence"]
        for ev in fact["evidence"]:
            assert ev["id"].startswith("ev:") and ev["text"]


def test_paper_example_exactly() -> None:
    (path,) = [p for p in EXAMPLES if p.stem.startswith("01_paper_example")]
    outcome = _run(path)
    assert outcome["status"] == "needs_clarification"
    assert outcome["product_type"] == "unmanned_aerial_vehicle"
    assert {"8806.21", "8806.22"} <= set(outcome["candidate_hs_codes"])
    assert outcome["missing_facts"] == ["maximum_takeoff_weight", "maximum_range"]
    assert outcome["permitted_to_finalize"] is False
    # the weight gap comes from classification, the range gap from dual-use entry 9A112
    by_rule = {r["rule"]: r for r in outcome["rules"]}
    assert by_rule["hs2022:8806.21"]["missing"] == ["maximum_takeoff_weight"]
    assert by_rule["EU-2021/821:9A112"] == {
        "rule": "EU-2021/821:9A112",
        "result": "unknown",
        "missing": ["maximum_range"],
    }
    sources = [s["id"] for s in outcome["legal_sources"]]
    assert "pack:customs.hs-router/routing-rule-8806-dual-use" in sources
    routing = next(s for s in outcome["legal_sources"] if s["role"] == "routing_rule")
    assert routing["binding"] is False
