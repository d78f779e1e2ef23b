"""customs.hs-router — HS classification of goods lines (chapter 88) with dual-use routing.

Loaded by path by the core under a synthetic package name: every import inside the pack is
relative. Entry points (thin, typed, JSON in / JSON out):

* ``tools.hs:classify_goods_line(payload) -> dict`` — the five stages, outcome as JSON;
* ``tools.hs:hs_lookup(code) -> dict`` — read-only nomenclature lookup;
* ``verifiers.hs:hs_code_exists`` / ``legal_source_current`` / ``required_permit_resolution``;
* ``validators.goods_line:validate_goods_line``,
  ``validators.outcome_graph:validate_outcome_graph``;
* ``governed:*`` — the governed tools, verifiers and validators (SDK declarations the
  manifest names); ``adapters:run_example`` — the example runner.

The package's names are resolved lazily (PEP 562), so this file imports nothing at load
time and can be imported under any name: pytest imports a test folder's parent package
``__init__.py`` as a top-level module named ``__init__`` when the folder name
(``customs.hs-router``) is not an identifier, where a relative import cannot resolve.
"""

from __future__ import annotations

import importlib
from typing import Any

PACK_ID = "customs.hs-router"

_LAZY = {"PACK_VERSION": "models", "classify_goods_line": "tools.hs", "hs_lookup": "tools.hs"}


def __getattr__(name: str) -> Any:
    if name in _LAZY and __package__:
        return getattr(importlib.import_module(f"{__package__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["PACK_ID", "PACK_VERSION", "classify_goods_line", "hs_lookup"]
