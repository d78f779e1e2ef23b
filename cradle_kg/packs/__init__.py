"""Domain packs: manifest, loader, registry, validation."""

from .loader import Pack, load_pack
from .manifest import Manifest, read_manifest
from .registry import PackRegistry

__all__ = ["Manifest", "Pack", "PackRegistry", "load_pack", "read_manifest"]
