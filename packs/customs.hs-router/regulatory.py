"""Stage 4 — regulatory evaluation: legal sources by priority and validity, dual-use routing.

Legal sources (``data/legal_sources.json``) are chosen per role: among the sources of a
role in force on the declaration date, the one with the lowest ``priority`` number wins; a
source not in force is never used. The outcome names every source it used.

Dual-use routing is the pack's OWN rule (``ROUTING_RULE_ID``): there is no public mapping
from HS codes to EU Regulation 2021/821 Annex I. Goods whose (candidate) code lies in
heading 8806 are checked against 9A012 and 9A112, transcribed from the Annex I text in
``data/eu-dual-use/annex_i_uav_excerpt.json`` (tests check every threshold against it):

* 9A012.a — designed for controlled flight out of the operator's direct natural vision
  AND (endurance ≥ 30 min and < 1 h AND stable flight in gusts ≥ 46,3 km/h
  OR endurance ≥ 1 h).
* 9A112 — other than 9A012, AND (a. capable of a range of 300 km
  OR b. (autonomous flight control OR controlled flight out of direct vision with a human
  operator) AND aerosol dispensing capacity > 20 litres).

Only 9A012.a (the UAV itself) and 9A112.a/.b are modelled; 9A012.b (equipment and
components) is not. An entry that evaluates UNKNOWN contributes its relevant unknown
attributes as missing facts — never a permit guess.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

from .models import ATTRIBUTE_ORDER, LegalSourceRef, ProductAttributes, RuleResult
from .tri import Cond, Expr, Not, Tri, all_of, any_of, evaluate, relevant_unknowns

DATA = Path(__file__).resolve().parent / "data"
SOURCES_JSON = DATA / "legal_sources.json"
ANNEX_JSON = DATA / "eu-dual-use" / "annex_i_uav_excerpt.json"
ROUTING_RULE_ID = "pack:customs.hs-router/routing-rule-8806-dual-use"
PERMIT_PREFIX = "EU-2021/821:"
ROUTED_HEADING = "8806"

BVLOS = Cond("beyond_visual_line_of_sight", "==", True)
ENDURANCE = "endurance"  # minutes
DUAL_USE_9A012: Expr = all_of(
    BVLOS,
    any_of(
        all_of(
            Cond(ENDURANCE, ">=", 30.0),
            Cond(ENDURANCE, "<", 60.0),
            Cond("gust_tolerance", ">=", 46.3),
        ),
        Cond(ENDURANCE, ">=", 60.0),
    ),
)
DUAL_USE_9A112: Expr = all_of(
    Not(DUAL_USE_9A012),
    any_of(
        Cond("maximum_range", ">=", 300.0),
        all_of(
            any_of(Cond("autonomous_flight", "==", True), BVLOS),
            Cond("aerosol_capacity", ">", 20.0),
        ),
    ),
)
DUAL_USE_ENTRIES: tuple[tuple[str, Expr], ...] = (
    ("9A012", DUAL_USE_9A012),
    ("9A112", DUAL_USE_9A112),
)


@dataclass(frozen=True)
class LegalSource:
    id: str
    title: str
    role: str
    jurisdiction: str
    priority: int
    binding: bool
    valid_from: date
    valid_to: date | None
    data_file: str | None

    def in_force(self, at: date) -> bool:
        return self.valid_from <= at and (self.valid_to is None or at <= self.valid_to)

    def ref(self) -> LegalSourceRef:
        return LegalSourceRef(
            id=self.id,
            title=self.title,
            role=self.role,
            priority=self.priority,
            binding=self.binding,
            valid_from=self.valid_from,
            valid_to=self.valid_to,
        )


def load_sources(path: Path = SOURCES_JSON) -> tuple[LegalSource, ...]:
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return tuple(
        LegalSource(
            id=s["id"],
            title=s["title"],
            role=s["role"],
            jurisdiction=s["jurisdiction"],
            priority=int(s["priority"]),
            binding=bool(s["binding"]),
            valid_from=date.fromisoformat(s["valid_from"]),
            valid_to=date.fromisoformat(s["valid_to"]) if s["valid_to"] else None,
            data_file=s["data_file"],
        )
        for s in raw["sources"]
    )


@lru_cache(maxsize=1)
def default_sources() -> tuple[LegalSource, ...]:
    return load_sources()


def select_source(
    role: str, at: date, sources: tuple[LegalSource, ...] | None = None
) -> LegalSource | None:
    """The highest-priority source of ``role`` in force on ``at`` (None when none is)."""
    in_force = [s for s in (sources or default_sources()) if s.role == role and s.in_force(at)]
    return min(in_force, key=lambda s: s.priority) if in_force else None


@dataclass(frozen=True)
class Regulatory:
    evaluated: bool  # False when no rule covers the codes or no source was in force
    permits_required: tuple[str, ...]
    missing: tuple[str, ...]
    entries: tuple[RuleResult, ...]
    sources_used: tuple[LegalSource, ...]
    reasons: tuple[str, ...]


def evaluate_permits(
    attributes: ProductAttributes,
    codes: tuple[str, ...],
    at: date,
    sources: tuple[LegalSource, ...] | None = None,
) -> Regulatory:
    """Dual-use evaluation of goods whose candidate codes are ``codes`` (rendered form)."""
    routed = [c for c in codes if c.startswith(ROUTED_HEADING)]
    if not routed:
        heads = sorted({c[:4] for c in codes})
        return Regulatory(
            False,
            (),
            (),
            (),
            (),
            (
                f"no regulatory routing rule in this pack for heading(s) {', '.join(heads)}: "
                "permits not evaluated",
            ),
        )
    pool = sources or default_sources()
    rule = next((s for s in pool if s.id == ROUTING_RULE_ID and s.in_force(at)), None)
    control = select_source("export_control", at, pool)
    if rule is None or control is None:
        missing_role = "routing rule" if rule is None else "export-control source"
        return Regulatory(
            False,
            (),
            (),
            (),
            tuple(s for s in (rule, control) if s),
            (f"no {missing_role} in force on {at.isoformat()}: permits not evaluated",),
        )
    values = attributes.model_dump()
    permits: list[str] = []
    missing: set[str] = set()
    entries: list[RuleResult] = []
    for entry, expr in DUAL_USE_ENTRIES:
        result = evaluate(expr, values)
        gaps = relevant_unknowns(expr, values)
        entries.append(
            RuleResult(rule=f"{PERMIT_PREFIX}{entry}", result=result.label, missing=tuple(gaps))
        )
        if result is Tri.TRUE:
            permits.append(f"{PERMIT_PREFIX}{entry}")
        missing.update(gaps)
    ordered = tuple(name for name in ATTRIBUTE_ORDER if name in missing)
    return Regulatory(True, tuple(permits), ordered, tuple(entries), (control, rule), ())


def annex_entry_text(entry: str, path: Path = ANNEX_JSON) -> str | None:
    """The verbatim Annex I text of ``entry`` (label + content), or None if absent."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for item in data["entries"]:
        if item["code"] == entry:
            return f"{item['label']} {item['full_content']}"
    return None
