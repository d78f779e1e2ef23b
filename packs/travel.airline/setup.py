"""``cradle-kg pack init travel.airline --data DIR [--now ISO-8601]``: the manifest's ``init``.

Loads a directory in the benchmark's format (``users.json``, ``flights.json``,
``reservations.json``) into the home's airline database, replacing what was there, sets the
domain clock (default: the policy's 2024-05-15 15:00:00 EST), and returns the identity the
home needs: ``agent:airline-assistant``, allowed to call the pack's tools on its targets.
The core merges it into the home's configuration and enables the pack — only after this
returned, so a bad data directory leaves the home as it was.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from cradle_kg.packs.sdk import Agent, InputError, PackContext, Permission, RuntimeConfig

from .db import DEFAULT_NOW, EST, AirlineDB

AGENT = "agent:airline-assistant"
TARGETS = ("reservation:*", "customer:*", "airline:*")


def identities() -> RuntimeConfig:
    return RuntimeConfig(
        agents=(Agent(id=AGENT, role="airline-assistant"),),
        permissions=tuple(Permission(subject=AGENT, action_type="airline.*",
                                     resource_selector=t) for t in TARGETS))


def init(ctx: PackContext, data: Path | None, now: datetime | None) -> RuntimeConfig:
    if data is None:
        raise InputError("`travel.airline` needs `--data DIR`: a folder with `users.json`, "
                         "`flights.json` and `reservations.json`",
                         hint="the benchmark's data: ../shared/data/tau-airline")
    clock = DEFAULT_NOW if now is None else (now if now.tzinfo else now.replace(tzinfo=EST))
    AirlineDB.of(ctx).load(data, clock)  # every file is read and checked before it writes
    return identities()
