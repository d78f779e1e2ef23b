"""Typed data of the pack: the input goods line, candidate facts, attributes, the outcome.

Attribute catalogue (canonical units): see ``ATTRIBUTES``. The order of ``ATTRIBUTES`` is
the order in which missing facts are reported inside one stage.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field

PACK_ID = "customs.hs-router"


def _manifest_version() -> str:
    """The version the manifest declares: one source of truth, so a copied pack that bumps
    its manifest (two versions side by side) also names the new version in its decisions."""
    text = (Path(__file__).resolve().parent / "manifest.yaml").read_text(encoding="utf-8")
    # libyaml's safe loader when there is one: the pure-Python one costs ~8 ms at import
    manifest = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return str(manifest["version"])


PACK_VERSION = _manifest_version()

ProductType = Literal[
    "unmanned_aerial_vehicle",
    "balloon_or_dirigible",
    "glider",
    "helicopter",
    "aeroplane",
    "propeller_or_rotor",
    "undercarriage",
    "aircraft_part",
]
PRODUCT_TYPES: tuple[str, ...] = get_args(ProductType)
Dimension = Literal["mass", "length", "duration", "volume", "speed"]


@dataclass(frozen=True)
class AttributeSpec:
    name: str
    kind: Literal["enum", "bool", "quantity"]
    dimension: Dimension | None = None
    unit: str | None = None  # canonical unit
    values: tuple[str, ...] = ()


ATTRIBUTES: tuple[AttributeSpec, ...] = (
    AttributeSpec("product_type", "enum", values=PRODUCT_TYPES),
    AttributeSpec("maximum_takeoff_weight", "quantity", "mass", "kg"),
    AttributeSpec("remote_controlled_only", "bool"),
    AttributeSpec("passenger_carriage", "bool"),
    AttributeSpec("unladen_weight", "quantity", "mass", "kg"),
    AttributeSpec(
        "part_of",
        "enum",
        values=(
            "unmanned_aerial_vehicle",
            "helicopter",
            "aeroplane",
            "balloon_or_dirigible",
            "glider",
        ),
    ),
    AttributeSpec("maximum_range", "quantity", "length", "km"),
    AttributeSpec("endurance", "quantity", "duration", "min"),
    AttributeSpec("beyond_visual_line_of_sight", "bool"),
    AttributeSpec("autonomous_flight", "bool"),
    AttributeSpec("aerosol_capacity", "quantity", "volume", "l"),
    AttributeSpec("gust_tolerance", "quantity", "speed", "km/h"),
)
SPECS: dict[str, AttributeSpec] = {spec.name: spec for spec in ATTRIBUTES}
ATTRIBUTE_ORDER: tuple[str, ...] = tuple(spec.name for spec in ATTRIBUTES)

Value = bool | float | str
Status = Literal["classified", "needs_clarification", "rejected"]


class Frozen(BaseModel):
    # built on first use, not when the pack is imported (``tools list`` imports it)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class InputFact(Frozen):
    predicate: str = Field(min_length=1)
    value: Value
    unit: str | None = None
    source: str = Field(min_length=1)


class GoodsLine(Frozen):
    """One goods line as it reaches the pack (see README)."""

    description: str = Field(min_length=1)
    facts: tuple[InputFact, ...] = ()
    declared_at: date | None = None


class Evidence(Frozen):
    id: str
    source: str
    text: str
    start: int | None = None
    end: int | None = None

    @classmethod
    def make(
        cls, source: str, text: str, start: int | None = None, end: int | None = None
    ) -> Evidence:
        raw = json.dumps([source, text, start, end])
        return cls(
            id="ev:" + hashlib.sha256(raw.encode()).hexdigest()[:12],
            source=source,
            text=text,
            start=start,
            end=end,
        )


class CandidateFact(Frozen):
    """One stated value, before normalisation (raw unit) or after (canonical unit)."""

    predicate: str
    value: Value
    unit: str | None
    source: str
    evidence: Evidence

    @property
    def from_document(self) -> bool:
        """Documents outrank extractors: any source not named ``extractor:...`` is a document."""
        return not self.source.startswith("extractor:")


class Fact(Frozen):
    predicate: str
    value: Value
    unit: str | None
    sources: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    status: Literal["candidate", "derived"] = "candidate"
    derived_by: str | None = None


class ConflictValue(Frozen):
    value: Value
    unit: str | None
    sources: tuple[str, ...]


class Conflict(Frozen):
    predicate: str
    values: tuple[ConflictValue, ...]
    resolution: Literal["document_precedence", "unresolved"]
    chosen: Value | None = None


class ProductAttributes(Frozen):
    """The typed product: ``None`` is *unknown*, never a default."""

    product_type: ProductType | None = None
    maximum_takeoff_weight: float | None = Field(default=None, ge=0)
    remote_controlled_only: bool | None = None
    passenger_carriage: bool | None = None
    unladen_weight: float | None = Field(default=None, ge=0)
    part_of: str | None = None
    maximum_range: float | None = Field(default=None, ge=0)
    endurance: float | None = Field(default=None, ge=0)
    beyond_visual_line_of_sight: bool | None = None
    autonomous_flight: bool | None = None
    aerosol_capacity: float | None = Field(default=None, ge=0)
    gust_tolerance: float | None = Field(default=None, ge=0)


class LegalSourceRef(Frozen):
    id: str
    title: str
    role: str
    priority: int
    binding: bool
    valid_from: date
    valid_to: date | None


class RuleResult(Frozen):
    rule: str
    result: Literal["true", "false", "unknown"]
    missing: tuple[str, ...] = ()


class ModelCall(Frozen):
    stage: str
    component: str
    recorded: bool
    request: dict[str, Any]
    response: dict[str, Any]


class Decision(Frozen):
    """The formal decision: what the explainer receives, read-only, and can never change."""

    pack: str = f"{PACK_ID}@{PACK_VERSION}"
    status: Status
    hs_code: str | None = None
    candidate_hs_codes: tuple[str, ...] = ()
    product_type: str | None = None
    missing_facts: tuple[str, ...] = ()
    permits_required: tuple[str, ...] = ()
    permitted_to_finalize: bool = False
    facts: tuple[Fact, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    legal_sources: tuple[LegalSourceRef, ...] = ()
    rules: tuple[RuleResult, ...] = ()
    national_subdivisions: tuple[dict[str, str], ...] = ()
    reasons: tuple[str, ...] = ()
    evaluated_at: date | None = None

    def digest(self) -> str:
        return decision_digest(self)


def decision_digest(decision: Decision) -> str:
    canonical = json.dumps(decision.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


class Outcome(Frozen):
    """What ``classify_goods_line`` returns (as JSON): the decision plus its explanation.

    The decision fields are copied unchanged; ``decision_digest`` is their digest, so
    ``Decision(**{k: outcome[k] for k in Decision.model_fields})`` reproduces it.
    """

    pack: str
    status: Status
    hs_code: str | None
    candidate_hs_codes: tuple[str, ...]
    product_type: str | None
    missing_facts: tuple[str, ...]
    permits_required: tuple[str, ...]
    permitted_to_finalize: bool
    facts: tuple[Fact, ...]
    conflicts: tuple[Conflict, ...]
    legal_sources: tuple[LegalSourceRef, ...]
    rules: tuple[RuleResult, ...]
    national_subdivisions: tuple[dict[str, str], ...]
    reasons: tuple[str, ...]
    evaluated_at: date | None
    decision_digest: str
    explanation: str
    explained_by: str
    explanation_refusals: tuple[str, ...] = ()
    model_calls: tuple[ModelCall, ...] = ()
