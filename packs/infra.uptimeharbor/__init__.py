"""infra.uptimeharbor — the domain pack of design paper §12 (outage → verified fix).

Loaded by path under a synthetic package name: every import inside the pack is relative.
"""

from __future__ import annotations

PACK_ID = "infra.uptimeharbor"
PACK_VERSION = "1.0.0"

__all__ = ["PACK_ID", "PACK_VERSION"]
