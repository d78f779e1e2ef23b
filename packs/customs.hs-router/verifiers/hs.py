"""Gate-2 verifiers for a classification outcome (the JSON ``classify_goods_line`` returns).

Each returns ``(status, detail)`` with status ``verified`` / ``failed`` / ``inconclusive``
and re-reads the pack's data files itself: a fresh parse of the HS CSV, of
``legal_sources.json`` and of the Annex I excerpt. ``required_permit_resolution`` also
re-derives the dual-use result with a second, plain-Python reading of 9A012/9A112 that
shares no code with the regulatory stage (so a transcription slip in one shows up).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from typing import Any, Literal

from ..nomenclature import HS_CSV, Nomenclature
from ..regulatory import ANNEX_JSON, DATA, PERMIT_PREFIX, SOURCES_JSON, load_sources

Status = Literal["verified", "failed", "inconclusive"]
Result = tuple[Status, str]


def hs_code_exists(outcome: Mapping[str, Any]) -> Result:
    """The classified code is a six-digit HS 2022 subheading; every candidate exists."""
    nomenclature = Nomenclature.load(HS_CSV)
    candidates = [str(c) for c in outcome.get("candidate_hs_codes") or []]
    unknown = [c for c in candidates if not nomenclature.exists(c)]
    if unknown:
        return "failed", f"candidate code(s) not in HS 2022: `{', '.join(unknown)}`"
    code = outcome.get("hs_code")
    if code is None:
        return "inconclusive", f"no final HS code (status `{outcome.get('status')}`)"
    entry = nomenclature.get(str(code))
    if entry is None:
        return "failed", f"HS code `{code}` does not exist in HS 2022"
    if entry.level != 6:
        return "failed", f"HS code `{code}` is a level-{entry.level} entry, not a subheading"
    return "verified", f"`{code}` exists in HS 2022: {entry.description}"


def legal_source_current(outcome: Mapping[str, Any], at_date: date) -> Result:
    """Every legal source the outcome cites is known, in force on ``at_date`` and on disk."""
    cited = [str(s["id"]) for s in outcome.get("legal_sources") or []]
    if not cited:
        return "inconclusive", "the outcome cites no legal source"
    registry = {s.id: s for s in load_sources(SOURCES_JSON)}
    problems: list[str] = []
    for source_id in cited:
        source = registry.get(source_id)
        if source is None:
            problems.append(f"`{source_id}` is not a known source")
        elif not source.in_force(at_date):
            problems.append(f"`{source_id}` is not in force on {at_date.isoformat()}")
        elif source.data_file and not (DATA / source.data_file).is_file():
            problems.append(f"`{source_id}` data file `{source.data_file}` is missing")
        elif source.role == "export_control":
            meta = json.loads(ANNEX_JSON.read_text(encoding="utf-8"))["metadata"]
            if date.fromisoformat(meta["consolidation_date"]) > at_date:
                problems.append(f"`{source_id}` text is consolidated after {at_date.isoformat()}")
    if problems:
        return "failed", "; ".join(problems)
    return "verified", f"{len(cited)} source(s) in force on {at_date.isoformat()}"


class _Unknown(Exception):
    pass


def _expected_permits(values: Mapping[str, Any]) -> list[str]:
    """Annex I 9A012.a / 9A112 read directly (raises ``_Unknown`` if a needed value is absent)."""

    def need(name: str) -> Any:
        if values.get(name) is None:
            raise _Unknown(name)
        return values[name]

    out_of_sight = need("beyond_visual_line_of_sight")
    in_9a012 = False
    if out_of_sight:
        minutes = need("endurance")
        if minutes >= 60:
            in_9a012 = True
        elif minutes >= 30:
            in_9a012 = need("gust_tolerance") >= 46.3
    if in_9a012:
        return [f"{PERMIT_PREFIX}9A012"]
    if values.get("maximum_range") is not None and values["maximum_range"] >= 300:
        return [f"{PERMIT_PREFIX}9A112"]
    if (out_of_sight or need("autonomous_flight")) and need("aerosol_capacity") > 20:
        return [f"{PERMIT_PREFIX}9A112"]
    need("maximum_range")  # 9A112.a is still open if the range is unknown
    return []


def required_permit_resolution(outcome: Mapping[str, Any]) -> Result:
    """The permits the outcome requires are exactly those Annex I requires for its facts."""
    code = outcome.get("hs_code")
    if outcome.get("status") != "classified" or code is None:
        return "inconclusive", f"no final classification (status `{outcome.get('status')}`)"
    annex = json.loads(ANNEX_JSON.read_text(encoding="utf-8"))
    known_entries = {e["code"] for e in annex["entries"]}
    claimed = sorted(str(p) for p in outcome.get("permits_required") or [])
    for permit in claimed:
        if permit.removeprefix(PERMIT_PREFIX) not in known_entries:
            return "failed", f"permit `{permit}` names no entry of the Annex I data"
    if not str(code).startswith("8806"):
        if claimed:
            return "failed", f"permits {claimed} for `{code}`, which no routing rule covers"
        return "inconclusive", f"no dual-use routing rule covers `{code}` in this pack"
    values = {str(f["predicate"]): f["value"] for f in outcome.get("facts") or []}
    try:
        expected = sorted(_expected_permits(values))
    except _Unknown as exc:
        return "inconclusive", f"fact `{exc.args[0]}` is unknown: permits cannot be re-derived"
    if expected != claimed:
        return "failed", f"outcome requires {claimed}, Annex I criteria give {expected}"
    return "verified", f"permits {expected or 'none'} re-derived from Annex I criteria"
