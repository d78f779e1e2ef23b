"""Import the pack folder as a package under a synthetic name, as the core's loader does."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PACK = Path(__file__).resolve().parent.parent
PACKAGE = "customs_hs_router"


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


_load_pack()
