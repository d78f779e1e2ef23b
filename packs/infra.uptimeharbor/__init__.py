"""infra.uptimeharbor — the domain pack of design paper §12 (outage → verified fix).

Loaded by path under a synthetic package name: every import inside the pack is relative.
"""

from __future__ import annotations

from pathlib import Path

import yaml

PACK_ID = "infra.uptimeharbor"
#: the manifest's version (one source of truth: a copied pack that bumps it says so)
#: (libyaml's safe loader when there is one: the pure-Python one costs ~8 ms at import)
PACK_VERSION = str(yaml.load(
    (Path(__file__).resolve().parent / "manifest.yaml").read_text(encoding="utf-8"),
    Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["version"])

__all__ = ["PACK_ID", "PACK_VERSION"]
