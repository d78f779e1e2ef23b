"""Tool entry points the core wires (it writes its own adapters to its Tool API).

Both are side-effect free: ``hs_lookup`` reads the nomenclature, ``classify_goods_line``
computes a decision and returns it as JSON; neither writes anywhere.
"""

from __future__ import annotations

from typing import Any

from ..nomenclature import default_nomenclature, national_subdivisions, normalise_code, render_code


def classify_goods_line(payload: dict[str, Any]) -> dict[str, Any]:
    """Run extraction → normalisation → classification → regulatory → explanation."""
    from ..pipeline import run  # where a goods line is classified, not at import

    return run(payload).model_dump(mode="json")


def hs_lookup(code: str) -> dict[str, Any]:
    """``{"code", "exists", "description", "level", "parent_chain", "national_subdivisions"}``."""
    digits = normalise_code(code)
    entry = default_nomenclature().get(code) if digits else None
    if digits is None or entry is None:
        return {
            "code": code,
            "exists": False,
            "description": None,
            "level": None,
            "parent_chain": [],
            "national_subdivisions": [],
        }
    chain = default_nomenclature().parent_chain(digits)
    return {
        "code": render_code(entry.code),
        "exists": True,
        "description": entry.description,
        "level": entry.level,
        "section": entry.section,
        "parent_chain": [
            {"code": render_code(e.code), "description": e.description, "level": e.level}
            for e in chain[1:]
        ],
        "national_subdivisions": national_subdivisions(digits),
        "source": "WCO:HS2022",
    }
