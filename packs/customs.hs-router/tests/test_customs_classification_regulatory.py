from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from customs_hs_router.classification import RULES, classify
from customs_hs_router.models import ProductAttributes
from customs_hs_router.nomenclature import default_nomenclature, normalise_code, render_code
from customs_hs_router.regulatory import (
    DUAL_USE_ENTRIES,
    ROUTING_RULE_ID,
    LegalSource,
    annex_entry_text,
    default_sources,
    evaluate_permits,
    select_source,
)
from customs_hs_router.tools.hs import hs_lookup
from customs_hs_router.tri import Cond, Expr, Not, Tri, evaluate
from hypothesis import given
from hypothesis import strategies as st

UAV = "unmanned_aerial_vehicle"
AT = date(2025, 12, 1)


def test_every_rule_code_is_a_real_hs2022_subheading() -> None:
    nomenclature = default_nomenclature()
    for digits, _expr in RULES:
        entry = nomenclature.get(digits)
        assert entry is not None and entry.level == 6, digits
        assert entry.parent is not None and entry.parent.startswith("88")


def test_heading_8806_is_covered_completely() -> None:
    children = {e.code for e in default_nomenclature().children("8806")}
    assert children == {d for d, _ in RULES if d.startswith("8806")}
    assert len(children) == 11


@pytest.mark.parametrize(
    ("weight", "rc_only", "code"),
    [
        (0.25, True, "8806.21"),
        (0.2501, True, "8806.22"),
        (7.0, True, "8806.22"),
        (7.01, True, "8806.23"),
        (25.0, True, "8806.23"),
        (25.5, True, "8806.24"),
        (150.0, True, "8806.24"),
        (150.1, True, "8806.29"),
        (0.25, False, "8806.91"),
        (7.0, False, "8806.92"),
        (25.0, False, "8806.93"),
        (150.0, False, "8806.94"),
        (600.0, False, "8806.99"),
    ],
)
def test_weight_band_boundaries(weight: float, rc_only: bool, code: str) -> None:
    result = classify(
        ProductAttributes(
            product_type=UAV,
            passenger_carriage=False,
            remote_controlled_only=rc_only,
            maximum_takeoff_weight=weight,
        )
    )
    assert (result.status, result.hs_code) == ("classified", code)
    # the rule's wording is the nomenclature's own: the weight band is in the description
    assert "remote-controlled flight only" in (hs_lookup(code)["description"] or "") or not rc_only


def test_passenger_carriage_ignores_weight() -> None:
    result = classify(ProductAttributes(product_type=UAV, passenger_carriage=True))
    assert (result.hs_code, result.missing) == ("8806.10", ())


weights = st.one_of(st.none(), st.floats(min_value=0, max_value=1000, allow_nan=False))
maybe = st.one_of(st.none(), st.booleans())


@given(st.floats(min_value=0, max_value=1000, allow_nan=False), st.booleans(), st.booleans())
def test_rules_are_mutually_exclusive_and_exhaustive_for_uavs(
    w: float, rc: bool, pax: bool
) -> None:
    attrs = ProductAttributes(
        product_type=UAV,
        maximum_takeoff_weight=w,
        remote_controlled_only=rc,
        passenger_carriage=pax,
    ).model_dump()
    hits = [d for d, expr in RULES if evaluate(expr, attrs) is Tri.TRUE]
    assert len(hits) == 1


@given(
    st.floats(min_value=0, max_value=1000, allow_nan=False),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_hiding_facts_keeps_the_true_code_among_candidates(
    w: float, rc: bool, pax: bool, hide_w: bool, hide_rc: bool, hide_pax: bool
) -> None:
    full = classify(
        ProductAttributes(
            product_type=UAV,
            maximum_takeoff_weight=w,
            remote_controlled_only=rc,
            passenger_carriage=pax,
        )
    )
    partial = classify(
        ProductAttributes(
            product_type=UAV,
            maximum_takeoff_weight=None if hide_w else w,
            remote_controlled_only=None if hide_rc else rc,
            passenger_carriage=None if hide_pax else pax,
        )
    )
    assert full.hs_code is not None and full.hs_code in partial.candidates
    if partial.status == "needs_clarification":
        hidden = {
            n
            for n, h in (
                ("maximum_takeoff_weight", hide_w),
                ("remote_controlled_only", hide_rc),
                ("passenger_carriage", hide_pax),
            )
            if h
        }
        assert partial.missing and set(partial.missing) <= hidden
        assert all(default_nomenclature().exists(c) for c in partial.candidates)


def test_hs_lookup() -> None:
    found = hs_lookup("880622")
    assert found["exists"] and found["code"] == "8806.22" and found["level"] == 6
    assert [p["code"] for p in found["parent_chain"]] == ["8806", "88"]
    assert {n["code"] for n in found["national_subdivisions"]} == {"8806220001", "8806220009"}
    assert hs_lookup("8806.20")["exists"] is False
    assert hs_lookup("999999")["exists"] is False  # pseudo-code
    assert hs_lookup("not a code")["exists"] is False
    assert normalise_code("8806 21") == "880621" and render_code("880621") == "8806.21"


# --- legal sources -----------------------------------------------------------------------


def test_sources_in_force_by_date() -> None:
    assert select_source("nomenclature", date(2021, 12, 31)) is None
    hs = select_source("nomenclature", date(2022, 1, 1))
    assert hs is not None and hs.id == "WCO:HS2022"
    assert select_source("export_control", date(2025, 11, 14)) is None
    annex = select_source("export_control", date(2025, 11, 15))
    assert annex is not None and annex.id == "EU-2021/821:AnnexI@2025-11"


def test_priority_decides_among_sources_in_force() -> None:
    base = next(s for s in default_sources() if s.role == "export_control")
    newer = LegalSource(
        id="test:annex-next",
        title="t",
        role="export_control",
        jurisdiction="EU",
        priority=5,
        binding=True,
        valid_from=date(2026, 1, 1),
        valid_to=None,
        data_file=None,
    )
    expired = LegalSource(
        id="test:annex-old",
        title="t",
        role="export_control",
        jurisdiction="EU",
        priority=1,
        binding=True,
        valid_from=date(2020, 1, 1),
        valid_to=date(2025, 11, 14),
        data_file=None,
    )
    pool = (*default_sources(), newer, expired)
    chosen_2025 = select_source("export_control", date(2025, 12, 1), pool)
    chosen_2026 = select_source("export_control", date(2026, 2, 1), pool)
    chosen_2024 = select_source("export_control", date(2024, 2, 1), pool)
    assert chosen_2025 == base
    assert chosen_2026 == newer
    assert chosen_2024 == expired


def _uav(**kw: Any) -> ProductAttributes:
    return ProductAttributes(product_type=UAV, **kw)


def test_routing_rule_is_named_and_not_binding() -> None:
    reg = evaluate_permits(
        _uav(beyond_visual_line_of_sight=True, endurance=120.0), ("8806.93",), AT
    )
    assert reg.permits_required == ("EU-2021/821:9A012",)
    ids = [s.id for s in reg.sources_used]
    assert ROUTING_RULE_ID in ids
    assert not next(s for s in reg.sources_used if s.id == ROUTING_RULE_ID).binding


def test_no_routing_outside_8806() -> None:
    reg = evaluate_permits(ProductAttributes(product_type="helicopter"), ("8802.11",), AT)
    assert not reg.evaluated and reg.permits_required == () and "8802" in reg.reasons[0]


def test_no_export_control_source_in_force_means_not_evaluated() -> None:
    reg = evaluate_permits(_uav(), ("8806.22",), date(2025, 6, 1))
    assert not reg.evaluated and reg.missing == ()
    assert "export-control source" in reg.reasons[0]


@pytest.mark.parametrize(
    ("attrs", "permits", "missing"),
    [
        ({"beyond_visual_line_of_sight": True, "endurance": 60.0}, ("EU-2021/821:9A012",), ()),
        (
            {"beyond_visual_line_of_sight": True, "endurance": 59.0, "gust_tolerance": 46.3},
            ("EU-2021/821:9A012",),
            (),
        ),
        (
            {"beyond_visual_line_of_sight": True, "endurance": 29.0, "maximum_range": 300.0},
            ("EU-2021/821:9A112",),
            (),
        ),
        (
            {
                "beyond_visual_line_of_sight": False,
                "autonomous_flight": True,
                "aerosol_capacity": 20.5,
                "maximum_range": 1.0,
            },
            ("EU-2021/821:9A112",),
            (),
        ),
        (
            {
                "beyond_visual_line_of_sight": False,
                "autonomous_flight": False,
                "maximum_range": 299.0,
            },
            (),
            (),
        ),
        (
            {"beyond_visual_line_of_sight": False, "autonomous_flight": False},
            (),
            ("maximum_range",),
        ),
    ],
)
def test_dual_use_criteria(
    attrs: dict[str, Any], permits: tuple[str, ...], missing: tuple[str, ...]
) -> None:
    reg = evaluate_permits(_uav(**attrs), ("8806.22",), AT)
    assert (reg.permits_required, reg.missing) == (permits, missing)


@pytest.mark.parametrize(
    ("entry", "phrase"),
    [
        ("9A012", "greater than or equal to 30 minutes but less than 1 hour"),
        ("9A012", "wind gusts equal to or exceeding 46,3 km/h (25 knots)"),
        ("9A012", "A maximum 'endurance' of 1 hour or greater"),
        ("9A012", "out of the direct 'natural vision' of the 'operator'"),
        ("9A112", "capable of a range of 300 km"),
        ("9A112", "An autonomous flight control and navigation capability"),
        ("9A112", "capacity greater than 20 litres"),
        ("9A112", "other than those specified in 9A012"),
    ],
)
def test_thresholds_are_the_annex_text(entry: str, phrase: str) -> None:
    text = annex_entry_text(entry)
    assert text is not None and phrase in text


def _numbers(expr: Expr) -> set[float]:
    if isinstance(expr, Cond):
        return {float(expr.operand)} if isinstance(expr.operand, float) else set()
    if isinstance(expr, Not):
        return _numbers(expr.member)
    return set().union(*(_numbers(m) for m in expr.members))


def test_every_threshold_in_the_code_is_written_in_the_annex() -> None:
    wording = {
        30.0: "30 minutes",
        60.0: "1 hour",
        46.3: "46,3 km/h",
        300.0: "300 km",
        20.0: "20 litres",
    }
    text = " ".join(annex_entry_text(e) or "" for e, _ in DUAL_USE_ENTRIES)
    used = set().union(*(_numbers(expr) for _, expr in DUAL_USE_ENTRIES))
    assert used == set(wording)
    for number in used:
        assert wording[number] in text
