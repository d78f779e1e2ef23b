"""The graph hooks of the packs a home's configuration names, without a Runtime.

``cradle-kg graph sync|rebuild``, ``cradle-kg query`` and ``serve`` project journal events
themselves when no runtime has; they must run the same pack projection hooks a runtime
would, or the packs' records would be missing from the events they project (the watermark
moves on). Loaded only when there is something to project.

TRUST: this imports the packs' code, as opening a Runtime on the home does.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ..config import load_config
from ..graph.knowledge import KnowledgeSource
from ..graph.packproj import PackProjector
from ..home import Home
from .registration import PreparedPack, prepare_pack
from .registry import PackRegistry


def _prepared(root: Path) -> list[PreparedPack]:
    config = load_config(Home(root).config)
    if not config.packs:
        return []
    registry = PackRegistry.discover(root)
    return [prepare_pack(registry.get(ref), home=root, clock=lambda: datetime.now(UTC))
            for ref in config.packs]


def home_projectors(root: Path) -> list[PackProjector]:
    """The projection hooks of the home's configured packs, in configuration order."""
    return [p for prepared in _prepared(root) for p in prepared.projectors()]


def home_knowledge(root: Path) -> list[KnowledgeSource]:
    """The knowledge graphs of the home's configured packs (ontologies, reference data)."""
    return [k for prepared in _prepared(root) for k in prepared.knowledge_sources()]


__all__ = ["home_knowledge", "home_projectors"]
