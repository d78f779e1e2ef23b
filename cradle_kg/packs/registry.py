"""Finding packs: the built-in ``packs/`` folder, the home's ``packs/``, and entry points.

A third-party pack installed as a Python distribution declares an entry point in the
group ``cradle_kg.packs`` whose value is a callable returning the pack folder's path.
Several versions of one pack may be present at once; ``id`` alone means the newest,
``id@version`` one exact version.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from threading import Lock

from ..errors import ManifestError, UnknownNameError
from ..graph.vocab import ONTOLOGY_DIR
from .loader import Pack, load_pack
from .manifest import version_key

BUILTIN_PACKS = ONTOLOGY_DIR.parent / "packs"
ENTRY_POINT_GROUP = "cradle_kg.packs"

#: the group's entry points as last listed, and what the listing was made on
_LISTED: dict[str, tuple[tuple[tuple[str, int], ...], tuple[EntryPoint, ...]]] = {}
_LISTED_LOCK = Lock()


def _path_state() -> tuple[tuple[str, int], ...]:
    """Each folder of ``sys.path`` with its modification time: installing or removing a
    distribution adds or removes its ``*.dist-info`` there, which changes the time."""
    out: list[tuple[str, int]] = []
    for entry in sys.path:
        try:
            out.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            out.append((entry, -1))
    return tuple(out)


def pack_entry_points() -> tuple[EntryPoint, ...]:
    """The entry points of :data:`ENTRY_POINT_GROUP`, listed again only when a folder of
    ``sys.path`` changed (listing reads every installed distribution's metadata: ~15 ms
    here, at each runtime's start)."""
    state = _path_state()
    with _LISTED_LOCK:
        listed = _LISTED.get(ENTRY_POINT_GROUP)
        if listed is not None and listed[0] == state:
            return listed[1]
    found = tuple(entry_points(group=ENTRY_POINT_GROUP))
    with _LISTED_LOCK:
        _LISTED[ENTRY_POINT_GROUP] = (state, found)
    return found


@dataclass
class PackRegistry:
    packs: dict[str, Pack] = field(default_factory=dict)  # "id@version" -> pack

    def add(self, pack: Pack) -> None:
        existing = self.packs.get(pack.ref)
        if existing is not None and existing.path != pack.path:
            raise ManifestError(f"pack `{pack.ref}` is installed twice: `{existing.path}` and "
                                f"`{pack.path}`")
        self.packs[pack.ref] = pack

    def add_folder(self, folder: Path) -> None:
        if (folder / "manifest.yaml").is_file():
            self.add(load_pack(folder))

    @classmethod
    def discover(cls, home: Path | None = None, *, extra: Iterable[Path] = ()) -> PackRegistry:
        registry = cls()
        roots = [BUILTIN_PACKS] + ([home / "packs"] if home is not None else [])
        for root in roots:
            if root.is_dir():
                for folder in sorted(root.iterdir()):
                    registry.add_folder(folder)
        for ep in pack_entry_points():
            try:
                registry.add_folder(Path(ep.load()()))
            except ManifestError:
                raise
            except Exception as exc:
                raise ManifestError(f"entry point `{ep.name}` ({ep.value}) failed: {exc}") from exc
        for folder in extra:
            registry.add_folder(folder)
        return registry

    def get(self, ref: str) -> Pack:
        """``id@version``, ``id`` (the newest version, by semantic-version precedence: a
        release above its candidates) or a folder path."""
        if ref in self.packs:
            return self.packs[ref]
        if Path(ref).is_dir() and (Path(ref) / "manifest.yaml").is_file():
            pack = load_pack(Path(ref))
            self.add(pack)
            return pack
        versions = [p for p in self.packs.values() if p.id == ref]
        if not versions:
            known = ", ".join(sorted(self.packs)) or "none"
            raise UnknownNameError(f"unknown pack `{ref}`", hint=f"installed: {known}")
        return max(versions, key=lambda p: version_key(p.version))

    def latest(self) -> list[Pack]:
        ids = sorted({p.id for p in self.packs.values()})
        return [self.get(i) for i in ids]

    def all(self) -> list[Pack]:
        return [self.packs[k] for k in sorted(self.packs)]
