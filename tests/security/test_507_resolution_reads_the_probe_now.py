"""Finding: ``infra.resolve_incident`` ("close an incident: only on a verified resolution of
its own probe") wrote the incident ``resolved`` and gave the fix's claim back on gate 1's
word alone, and gate 1 reads the pack's verification log — a *past* reading: the fix had
been verified in production once, so after production went down (its process gone, the
state file still naming the fix's commit) the resolution passed gate 1 and the tool closed
the incident with the original failing probe failing. Gate 2 then read the probe and could
not verify it (``inconclusive``, a person asked), but the tool has no compensation: the
record stayed ``resolved``, the claim released, while the outage was back.
Now the tool reads the incident's own probe before it writes: when the paths that failed at
the incident do not pass now, it writes nothing (a ``ToolError``): the incident stays open
and the fix keeps its claim; a resolution whose probe passes runs as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cradle_kg.packs import testing
from cradle_kg.records import OutcomeStatus
from tests.security.harbor_world import PACK, fixed_in_production, outage, submit

WORLD = "w507"

home = testing.fixture(PACK, scope="module")


def _submit(home: testing.PackHome, pid: str, tool: str, thing: str,
            arguments: dict[str, Any], environment: str, task: str = "t507",
            **action: Any) -> Any:
    return submit(home, WORLD, pid, tool, thing, arguments, environment, task=task, **action)


@pytest.fixture(scope="module")
def fixed(home: testing.PackHome) -> Iterator[tuple[Any, Any, str]]:
    """An incident whose fix-1 ran through staging to production, verified there."""
    with outage(home, WORLD) as (h, fx, incident):
        iid = str(incident["id"])
        fixed_in_production(home, WORLD, h, fx, iid)
        yield h, fx, iid


def test_a_resolution_while_the_probe_fails_writes_nothing(
        home: testing.PackHome, fixed: tuple[Any, Any, str]) -> None:
    h, fx, iid = fixed
    h.envs.stop("production")  # the fixed service went down; the state file names the fix
    assert h.store.env("production")["commit"] == fx["fix"]
    out = _submit(home, "p507-resolve-down", "infra.resolve_incident", f"incident/{iid}",
                  {"incident_id": iid, "fix_id": "fix-1"}, "production")
    assert out.status is not OutcomeStatus.EXECUTED, out.reasons
    state = h.snapshot()
    # before: 'resolved' (and the claim released) — gate 2 found it inconclusive after
    assert state["incidents"][iid]["status"] == "open", state["incidents"][iid]
    assert state["fix_locks"][iid]["fix_id"] == "fix-1"


def test_a_resolution_whose_probe_passes_still_closes(
        home: testing.PackHome, fixed: tuple[Any, Any, str]) -> None:
    h, fx, iid = fixed
    if h.store.env("production").get("pid") is None:
        h.envs.start("production", fx["fix"], key="restart-507")
    out = _submit(home, "p507-resolve", "infra.resolve_incident", f"incident/{iid}",
                  {"incident_id": iid, "fix_id": "fix-1"}, "production", task="t507-up")
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert h.snapshot()["incidents"][iid]["status"] == "resolved"
