"""Worlds: one repository and its two environments under ``<home>/uptimeharbor/<world>/``,
named by a tool's target (``harbor:<world>/<thing>``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cradle_kg.packs.sdk import PackContext, ToolCall, VerifyRequest

from ..harbor import Harbor

_WORLDS_LOCK = threading.Lock()
_WORLDS: dict[Path, Harbor] = {}


def world_dir(root: Path, world: str) -> Path:
    return root / "uptimeharbor" / world


def harbor_for(root: Path, world: str) -> Harbor:
    """The harbor of ``world`` under the runtime's home (one instance per world)."""
    base = world_dir(root, world)
    with _WORLDS_LOCK:
        found = _WORLDS.get(base)
        if found is None:
            found = _WORLDS[base] = Harbor(base / "harbor", base / "repo")
        return found


def world_of(target: str) -> str:
    """``harbor:<world>/<thing>`` -> ``<world>``."""
    if not target.startswith("harbor:") or "/" not in target:
        raise ValueError(f"`{target}` is not a harbor target (harbor:<world>/<thing>)")
    return target.removeprefix("harbor:").split("/", 1)[0]


def target(world: str, thing: str) -> str:
    return f"harbor:{world}/{thing}"


def harbor_of(ctx: PackContext, target: str) -> Harbor:
    return harbor_for(ctx.home, world_of(target))



def args_of(call: ToolCall | VerifyRequest, model: type[BaseModel]) -> Any:
    args = call.arguments
    assert isinstance(args, model)
    return args


