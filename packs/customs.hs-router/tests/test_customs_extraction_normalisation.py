from __future__ import annotations

import pytest
from customs_hs_router.extraction import KeywordExtractor, parse_number
from customs_hs_router.models import CandidateFact, Evidence
from customs_hs_router.normalisation import convert, normalise

BRIEF_TEXT = (
    "Drone / unmanned aerial vehicle (UAV), quadcopter. MTOW 0.9 kg; max take-off weight 900 g; "
    "range 15 km; flight time 30 min; BVLOS capable"
)


def _extract(text: str) -> dict[str, list[CandidateFact]]:
    out: dict[str, list[CandidateFact]] = {}
    for cand in KeywordExtractor().extract(text):
        out.setdefault(cand.predicate, []).append(cand)
    return out


def test_keyword_extractor_reads_the_brief_phrases_with_spans() -> None:
    found = _extract(BRIEF_TEXT)
    assert {c.value for c in found["product_type"]} == {"unmanned_aerial_vehicle"}
    assert [(c.value, c.unit) for c in found["maximum_takeoff_weight"]] == [
        (0.9, "kg"),
        (900.0, "g"),
    ]
    assert [(c.value, c.unit) for c in found["maximum_range"]] == [(15.0, "km")]
    assert [(c.value, c.unit) for c in found["endurance"]] == [(30.0, "min")]
    assert [c.value for c in found["beyond_visual_line_of_sight"]] == [True]
    for cands in found.values():
        for cand in cands:
            ev = cand.evidence
            assert cand.source == "extractor:keyword@1.0.0"
            assert ev.start is not None and BRIEF_TEXT[ev.start : ev.end] == ev.text


def test_nothing_unstated_becomes_a_candidate() -> None:
    found = _extract("Quadcopter with camera")
    assert set(found) == {"product_type"}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("UAV, BVLOS", True),
        ("UAV, beyond visual line of sight", True),
        ("UAV, not BVLOS", False),
        ("UAV, VLOS only", False),
        ("UAV operated within visual line of sight", False),
    ],
)
def test_line_of_sight_negations(text: str, value: bool) -> None:
    assert [c.value for c in _extract(text)["beyond_visual_line_of_sight"]] == [value]


def test_part_phrase_is_not_read_as_the_craft() -> None:
    found = _extract("Spare propellers for quadcopter drones")
    assert [c.value for c in found["product_type"]] == ["propeller_or_rotor"]
    assert [c.value for c in found["part_of"]] == ["unmanned_aerial_vehicle"]


def test_parse_number() -> None:
    assert parse_number("0,9") == 0.9
    assert parse_number("1,500") == 1500.0
    assert parse_number("12") == 12.0
    assert parse_number("0.500") == 0.5
    with pytest.raises(ValueError, match="ambiguous"):  # 1.5 or 1500 (tests/security/test_430)
        parse_number("1.500")


def _cand(predicate: str, value: object, unit: str | None, source: str) -> CandidateFact:
    return CandidateFact.model_validate(
        {
            "predicate": predicate,
            "value": value,
            "unit": unit,
            "source": source,
            "evidence": Evidence.make(source, f"{predicate}={value}"),
        }
    )


@pytest.mark.parametrize(
    ("predicate", "value", "unit", "expected"),
    [
        ("maximum_takeoff_weight", 900, "g", (0.9, "kg")),
        ("maximum_takeoff_weight", 250, "g", (0.25, "kg")),
        ("maximum_range", 5000, "m", (5.0, "km")),
        ("endurance", 2, "h", (120.0, "min")),
        ("endurance", 90, "seconds", (1.5, "min")),
        ("aerosol_capacity", 500, "ml", (0.5, "l")),
        ("aerosol_capacity", 30, "L", (30.0, "l")),
        ("gust_tolerance", 25, "knots", (46.3, "km/h")),
        ("gust_tolerance", 10, "m/s", (36.0, "km/h")),
    ],
)
def test_unit_conversion(
    predicate: str, value: float, unit: str, expected: tuple[float, str]
) -> None:
    assert convert(_cand(predicate, value, unit, "doc:x")) == expected


@pytest.mark.parametrize(
    ("predicate", "value", "unit"),
    [
        ("colour", "red", None),
        ("maximum_takeoff_weight", 2, None),
        ("maximum_takeoff_weight", 2, "furlong"),
        ("maximum_takeoff_weight", -1, "kg"),
        ("maximum_takeoff_weight", True, "kg"),
        ("passenger_carriage", "no", None),
        ("product_type", "submarine", None),
    ],
)
def test_untypable_values_are_errors(predicate: str, value: object, unit: str | None) -> None:
    with pytest.raises(ValueError):
        convert(_cand(predicate, value, unit, "doc:x"))


def test_document_outranks_extractor_and_the_conflict_is_reported() -> None:
    norm = normalise(
        [
            _cand("maximum_takeoff_weight", 240, "g", "extractor:keyword@1.0.0"),
            _cand("maximum_takeoff_weight", 0.9, "kg", "doc:datasheet"),
        ]
    )
    assert norm.attributes.maximum_takeoff_weight == 0.9
    (conflict,) = norm.conflicts
    assert conflict.resolution == "document_precedence" and conflict.chosen == 0.9
    assert {v.value for v in conflict.values} == {0.24, 0.9}
    assert norm.facts[0].sources == ("doc:datasheet",)


def test_same_rank_disagreement_stays_unknown() -> None:
    norm = normalise(
        [
            _cand("maximum_range", 10, "km", "doc:invoice"),
            _cand("maximum_range", 20, "km", "doc:datasheet"),
        ]
    )
    assert norm.attributes.maximum_range is None
    assert [c.resolution for c in norm.unresolved] == ["unresolved"]


def test_agreeing_sources_merge_with_all_evidence() -> None:
    norm = normalise(
        [
            _cand("maximum_range", 15, "km", "doc:invoice"),
            _cand("maximum_range", 15000, "m", "extractor:keyword@1.0.0"),
        ]
    )
    (fact,) = norm.facts
    assert fact.value == 15.0 and fact.unit == "km"
    assert fact.sources == ("doc:invoice", "extractor:keyword@1.0.0")  # corroborated
    assert len(fact.evidence) == 2
    assert not norm.conflicts


def test_derived_fact_names_its_rule_and_premise() -> None:
    norm = normalise([_cand("remote_controlled_only", True, None, "doc:x")])
    derived = {f.predicate: f for f in norm.facts}["autonomous_flight"]
    assert derived.value is False and derived.status == "derived"
    assert derived.derived_by is not None and derived.derived_by.startswith(
        "rule:customs.hs-router/"
    )


def test_stated_contradiction_is_an_error() -> None:
    norm = normalise(
        [
            _cand("remote_controlled_only", True, None, "doc:x"),
            _cand("autonomous_flight", True, None, "doc:y"),
        ]
    )
    assert norm.errors and "contradiction" in norm.errors[0]
