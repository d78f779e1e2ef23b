"""Worlds: one repository and its two environments under ``<home>/uptimeharbor/<world>/``,
named by a tool's target (``harbor:<world>/<thing>``)."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cradle_kg.packs.sdk import PackContext, ToolCall, UnknownNameError, VerifyRequest

from ..harbor import Harbor

_WORLDS_LOCK = threading.Lock()
_WORLDS: dict[Path, Harbor] = {}


#: a world's name: one folder under ``<home>/uptimeharbor/`` (never ``.`` or ``..``)
WORLD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def world_dir(root: Path, world: str) -> Path:
    if not WORLD_NAME.fullmatch(world):
        raise UnknownNameError(f"`{world}` is not a world name (letters, digits, `.`, `_`, "
                               "`-`; 64 at most)")
    return root / "uptimeharbor" / world


def harbor_for(root: Path, world: str) -> Harbor:
    """The harbor of ``world`` under the runtime's home (one instance per world), made if
    it is not there: for the pack's own runners, which set a world up. An agent's target
    goes through :func:`harbor_of`, which opens only a world that is there."""
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
    """The harbor of the world ``target`` names — one that was set up: a target creates no
    folder and no harbor (tests/security/test_432), whatever name it carries."""
    world = world_of(target)
    if not (world_dir(ctx.home, world) / "harbor").is_dir():
        raise UnknownNameError(f"unknown world `{world}`: no harbor was set up under that "
                               "name")
    return harbor_for(ctx.home, world)



def args_of(call: ToolCall | VerifyRequest, model: type[BaseModel]) -> Any:
    args = call.arguments
    assert isinstance(args, model)
    return args


