"""customs.hs-router — HS classification of goods lines (chapter 88) with dual-use routing.

Loaded by path by the core under a synthetic package name: every import inside the pack is
relative. Entry points (thin, typed, JSON in / JSON out):

* ``tools.hs:classify_goods_line(payload) -> dict`` — the five stages, outcome as JSON;
* ``tools.hs:hs_lookup(code) -> dict`` — read-only nomenclature lookup;
* ``verifiers.hs:hs_code_exists`` / ``legal_source_current`` / ``required_permit_resolution``;
* ``validators.goods_line:validate_goods_line``,
  ``validators.outcome_graph:validate_outcome_graph``.
"""

from __future__ import annotations

from .models import PACK_ID, PACK_VERSION
from .tools.hs import classify_goods_line, hs_lookup

__all__ = ["PACK_ID", "PACK_VERSION", "classify_goods_line", "hs_lookup"]
