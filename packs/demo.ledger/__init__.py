"""demo.ledger — the tools of ``cradle-kg demo``: a small account ledger an agent can affect.

Loaded by path under a synthetic package name, like every pack: imports inside it are
relative. The manifest names its tools and verifiers (``tools:*``); the demo home's
Cedar policies are the home's own (``cradle-kg demo`` writes them), not the pack's.
"""

from __future__ import annotations

PACK_ID = "demo.ledger"

__all__ = ["PACK_ID"]
