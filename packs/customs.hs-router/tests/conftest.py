"""Import the pack folder as a package under a synthetic name, as the core's loader does."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

PACK = Path(__file__).resolve().parent.parent
PACKAGE = "customs_hs_router"
RECORDED = Path(__file__).resolve().parent / "recorded"


def _load_pack() -> None:
    if PACKAGE in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(
        PACKAGE, PACK / "__init__.py", submodule_search_locations=[str(PACK)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    spec.loader.exec_module(module)
    # pytest collects the pack folder as a Package (it has an __init__.py) and, because
    # "customs.hs-router" is not an identifier, imports that __init__.py under the bare
    # name "__init__" (prepend mode), where its relative imports cannot resolve. Point
    # that name at the package loaded above (same __file__, so pytest's check passes).
    sys.modules.setdefault("__init__", module)


_load_pack()


def load_recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RECORDED / name).read_text(encoding="utf-8"))
    assert data["recorded"] is True
    return data


@pytest.fixture
def pack_dir() -> Path:
    return PACK


class ReplayClient:
    """Strict replay of recorded model exchanges: a request that differs is a divergence."""

    def __init__(self, exchanges: list[dict[str, Any]]) -> None:
        self._exchanges = list(exchanges)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        from cradle_kg.errors import ReplayDivergenceError

        self.requests.append(request)
        if not self._exchanges:
            raise ReplayDivergenceError("no recorded exchange left to replay")
        exchange = self._exchanges.pop(0)
        if exchange["request"] != request:
            raise ReplayDivergenceError("request differs from the recorded request")
        response: dict[str, Any] = exchange["response"]
        return response
