"""Stage 2 — normalisation: candidate facts → typed ``ProductAttributes`` + ``Fact`` list.

* Units are converted to the attribute's canonical unit (kg, km, min, l, km/h).
* Precedence: a fact from a document (any source not named ``extractor:...``) outranks
  extractor output. A document/extractor disagreement is resolved by that precedence and
  **reported** as a ``Conflict`` (``document_precedence``). Disagreement among sources of
  the same rank is **unresolved**: the attribute stays unknown and the conflict is reported.
* Two stated logical equivalences are applied, each as a ``derived`` fact naming its rule
  and the fact it came from: remote-controlled-only ⇒ not autonomous, autonomous ⇒ not
  remote-controlled-only. A derived value that contradicts a stated one is a contradiction.
* Values that cannot be typed (unknown predicate, unknown unit, wrong type) are ``errors``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from .models import (
    ATTRIBUTE_ORDER,
    SPECS,
    CandidateFact,
    Conflict,
    ConflictValue,
    Evidence,
    Fact,
    InputFact,
    ProductAttributes,
    Value,
)

UNIT_FACTORS: dict[str, dict[str, float]] = {
    "mass": {"kg": 1.0, "g": 0.001, "t": 1000.0},
    "length": {"km": 1.0, "m": 0.001, "mi": 1.609344, "nmi": 1.852},
    "duration": {"min": 1.0, "s": 1 / 60, "h": 60.0},
    "volume": {"l": 1.0, "ml": 0.001},
    "speed": {"km/h": 1.0, "m/s": 3.6, "kn": 1.852},
}
UNIT_ALIASES: dict[str, str] = {
    "minute": "min",
    "minutes": "min",
    "mins": "min",
    "hour": "h",
    "hours": "h",
    "hr": "h",
    "hrs": "h",
    "sec": "s",
    "second": "s",
    "seconds": "s",
    "litre": "l",
    "litres": "l",
    "liter": "l",
    "liters": "l",
    "kmh": "km/h",
    "kph": "km/h",
    "knot": "kn",
    "knots": "kn",
}
DERIVATIONS: tuple[tuple[str, bool, str, bool, str], ...] = (
    (
        "remote_controlled_only",
        True,
        "autonomous_flight",
        False,
        "rule:customs.hs-router/remote-controlled-only-excludes-autonomous",
    ),
    (
        "autonomous_flight",
        True,
        "remote_controlled_only",
        False,
        "rule:customs.hs-router/autonomous-excludes-remote-controlled-only",
    ),
)


@dataclass
class Normalised:
    attributes: ProductAttributes
    facts: list[Fact] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def unresolved(self) -> list[Conflict]:
        return [c for c in self.conflicts if c.resolution == "unresolved"]


def document_candidates(facts: tuple[InputFact, ...]) -> list[CandidateFact]:
    """Explicit facts of the goods line, with a textual evidence record each."""
    out = []
    for fact in facts:
        unit = f" {fact.unit}" if fact.unit else ""
        evidence = Evidence.make(fact.source, f"{fact.predicate} = {fact.value!r}{unit}")
        out.append(
            CandidateFact(
                predicate=fact.predicate,
                value=fact.value,
                unit=fact.unit,
                source=fact.source,
                evidence=evidence,
            )
        )
    return out


def convert(candidate: CandidateFact) -> tuple[Value, str | None]:
    """Typed value and canonical unit; raises ``ValueError`` with a readable message."""
    spec = SPECS.get(candidate.predicate)
    if spec is None:
        raise ValueError(f"unknown predicate `{candidate.predicate}`")
    value = candidate.value
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"`{spec.name}` must be true or false, got `{value!r}`")
        return value, None
    if spec.kind == "enum":
        if value not in spec.values:
            raise ValueError(f"`{spec.name}` must be one of {list(spec.values)}, got `{value!r}`")
        return value, None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"`{spec.name}` must be a number, got `{value!r}`")
    assert spec.dimension is not None and spec.unit is not None
    key = (candidate.unit or "").strip().lower()
    unit = UNIT_ALIASES.get(key, key)
    factors = UNIT_FACTORS[spec.dimension]
    if unit not in factors:
        raise ValueError(
            f"`{spec.name}` needs a {spec.dimension} unit in {sorted(factors)}, "
            f"got `{candidate.unit}`"
        )
    if value < 0:
        raise ValueError(f"`{spec.name}` cannot be negative, got `{value}`")
    return round(float(value) * factors[unit], 9), spec.unit


def _group(
    cands: list[tuple[CandidateFact, Value, str | None]],
) -> dict[Value, list[CandidateFact]]:
    groups: dict[Value, list[CandidateFact]] = {}
    for cand, value, _unit in cands:
        groups.setdefault(value, []).append(cand)
    return groups


def _fact(predicate: str, value: Value, unit: str | None, cands: list[CandidateFact]) -> Fact:
    sources = tuple(dict.fromkeys(c.source for c in cands))
    return Fact(
        predicate=predicate,
        value=value,
        unit=unit,
        sources=sources,
        evidence=tuple(c.evidence for c in cands),
    )


def _conflict_values(
    groups: dict[Value, list[CandidateFact]], unit: str | None
) -> tuple[ConflictValue, ...]:
    return tuple(
        ConflictValue(value=v, unit=unit, sources=tuple(dict.fromkeys(c.source for c in cs)))
        for v, cs in groups.items()
    )


def normalise(candidates: list[CandidateFact]) -> Normalised:
    typed: dict[str, list[tuple[CandidateFact, Value, str | None]]] = {}
    errors: list[str] = []
    for cand in candidates:
        try:
            value, unit = convert(cand)
        except ValueError as exc:
            errors.append(f"fact from `{cand.source}`: {exc}")
            continue
        typed.setdefault(cand.predicate, []).append((cand, value, unit))

    facts: dict[str, Fact] = {}
    conflicts: list[Conflict] = []
    for predicate in ATTRIBUTE_ORDER:
        cands = typed.get(predicate, [])
        if not cands:
            continue
        unit = cands[0][2]
        documents = [t for t in cands if t[0].from_document]
        ranked = documents or cands
        groups = _group(ranked)
        if len(groups) > 1:
            conflicts.append(
                Conflict(
                    predicate=predicate,
                    values=_conflict_values(_group(cands), unit),
                    resolution="unresolved",
                )
            )
            continue
        (value,) = groups
        every = _group(cands)  # lower-rank candidates that agree corroborate the value
        if len(every) > 1:
            conflicts.append(
                Conflict(
                    predicate=predicate,
                    values=_conflict_values(every, unit),
                    resolution="document_precedence",
                    chosen=value,
                )
            )
        facts[predicate] = _fact(predicate, value, unit, every[value])

    _derive(facts, conflicts, errors)
    ordered = [facts[name] for name in ATTRIBUTE_ORDER if name in facts]
    values: dict[str, Any] = {f.predicate: f.value for f in ordered}
    try:
        attributes = ProductAttributes(**values)
    except ValidationError as exc:  # pragma: no cover - convert() already typed every value
        errors.append(f"attributes do not type: {exc}")
        attributes = ProductAttributes()
    return Normalised(attributes=attributes, facts=ordered, conflicts=conflicts, errors=errors)


def _derive(facts: dict[str, Fact], conflicts: list[Conflict], errors: list[str]) -> None:
    for premise, premise_value, target, target_value, rule in DERIVATIONS:
        source = facts.get(premise)
        if source is None or source.value is not premise_value:
            continue
        stated = facts.get(target)
        if stated is None:
            facts[target] = Fact(
                predicate=target,
                value=target_value,
                unit=None,
                sources=(rule,),
                evidence=source.evidence,
                status="derived",
                derived_by=rule,
            )
        elif stated.value is not target_value and stated.status != "derived":
            conflicts.append(
                Conflict(
                    predicate=target,
                    values=(
                        ConflictValue(value=stated.value, unit=None, sources=stated.sources),
                        ConflictValue(value=target_value, unit=None, sources=(rule,)),
                    ),
                    resolution="unresolved",
                )
            )
            errors.append(
                f"contradiction: `{premise}` = {premise_value} implies `{target}` = "
                f"{target_value}, but `{target}` = {stated.value} is stated"
            )
            del facts[target]
