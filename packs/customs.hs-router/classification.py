"""Stage 3 — classification: typed attributes → HS 2022 code(s), in three-valued logic.

Each rule is one HS 2022 subheading and a ``tri`` expression over the attributes, written
from the subheading's own wording (weights in kg: 250 g = 0.25 kg). Rules are mutually
exclusive (a property test checks it). Evaluation:

* exactly one rule TRUE and none UNKNOWN → ``classified``;
* otherwise the TRUE and UNKNOWN rules are the candidates → ``needs_clarification`` with
  ``missing`` = the unknown attributes that hold those rules at UNKNOWN;
* no rule TRUE or UNKNOWN → ``no_rule`` (the goods are outside what the pack covers).

Coverage: all of heading 8806; 8801; 8802 except 8802.60 (spacecraft); 8807.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .models import ATTRIBUTE_ORDER, ProductAttributes, RuleResult
from .nomenclature import render_code
from .tri import Cond, Expr, Tri, all_of, any_of, evaluate, relevant_unknowns

UAV = Cond("product_type", "==", "unmanned_aerial_vehicle")
MTOW = "maximum_takeoff_weight"
UNLADEN = "unladen_weight"


def _band(attribute: str, above: float | None, at_most: float | None) -> Expr:
    """``above < attribute <= at_most`` (either bound may be open)."""
    parts: list[Expr] = []
    if above is not None:
        parts.append(Cond(attribute, ">", above))
    if at_most is not None:
        parts.append(Cond(attribute, "<=", at_most))
    return all_of(*parts)


# (upper digits of the code, lower bound exclusive, upper bound inclusive), kg
UAV_WEIGHT_BANDS: tuple[tuple[str, float | None, float | None], ...] = (
    ("1", None, 0.25),
    ("2", 0.25, 7.0),
    ("3", 7.0, 25.0),
    ("4", 25.0, 150.0),
    ("9", 150.0, None),
)


def _rules() -> tuple[tuple[str, Expr], ...]:
    rules: list[tuple[str, Expr]] = [
        ("880610", all_of(UAV, Cond("passenger_carriage", "==", True))),
    ]
    for rc_only, tens in ((True, "2"), (False, "9")):
        for units, above, at_most in UAV_WEIGHT_BANDS:
            rules.append(
                (
                    f"8806{tens}{units}",
                    all_of(
                        UAV,
                        Cond("passenger_carriage", "==", False),
                        Cond("remote_controlled_only", "==", rc_only),
                        _band(MTOW, above, at_most),
                    ),
                )
            )
    rules += [
        (
            "880100",
            any_of(
                Cond("product_type", "==", "balloon_or_dirigible"),
                Cond("product_type", "==", "glider"),
            ),
        ),
        ("880211", all_of(Cond("product_type", "==", "helicopter"), _band(UNLADEN, None, 2000.0))),
        ("880212", all_of(Cond("product_type", "==", "helicopter"), _band(UNLADEN, 2000.0, None))),
        ("880220", all_of(Cond("product_type", "==", "aeroplane"), _band(UNLADEN, None, 2000.0))),
        (
            "880230",
            all_of(Cond("product_type", "==", "aeroplane"), _band(UNLADEN, 2000.0, 15000.0)),
        ),
        ("880240", all_of(Cond("product_type", "==", "aeroplane"), _band(UNLADEN, 15000.0, None))),
        ("880710", Cond("product_type", "==", "propeller_or_rotor")),
        ("880720", Cond("product_type", "==", "undercarriage")),
        (
            "880730",
            all_of(
                Cond("product_type", "==", "aircraft_part"),
                any_of(
                    *(
                        Cond("part_of", "==", craft)
                        for craft in ("aeroplane", "helicopter", "unmanned_aerial_vehicle")
                    )
                ),
            ),
        ),
        (
            "880790",
            all_of(
                Cond("product_type", "==", "aircraft_part"),
                any_of(
                    *(Cond("part_of", "==", craft) for craft in ("balloon_or_dirigible", "glider"))
                ),
            ),
        ),
    ]
    return tuple(rules)


RULES: tuple[tuple[str, Expr], ...] = _rules()


@dataclass(frozen=True)
class Classification:
    status: Literal["classified", "needs_clarification", "no_rule"]
    hs_code: str | None
    candidates: tuple[str, ...]
    missing: tuple[str, ...]
    rules: tuple[RuleResult, ...]


def classify(attributes: ProductAttributes) -> Classification:
    values = attributes.model_dump()
    true_codes: list[str] = []
    unknown_codes: list[str] = []
    missing: set[str] = set()
    results: list[RuleResult] = []
    for digits, expr in RULES:
        result = evaluate(expr, values)
        if result is Tri.FALSE:
            continue
        code = render_code(digits)
        gaps = relevant_unknowns(expr, values)
        results.append(RuleResult(rule=f"hs2022:{code}", result=result.label, missing=tuple(gaps)))
        if result is Tri.TRUE:
            true_codes.append(code)
        else:
            unknown_codes.append(code)
            missing.update(gaps)
    ordered_missing = tuple(name for name in ATTRIBUTE_ORDER if name in missing)
    if len(true_codes) == 1 and not unknown_codes:
        return Classification("classified", true_codes[0], tuple(true_codes), (), tuple(results))
    candidates = tuple(sorted(true_codes + unknown_codes))
    if not candidates:
        return Classification("no_rule", None, (), (), tuple(results))
    return Classification("needs_clarification", None, candidates, ordered_missing, tuple(results))
