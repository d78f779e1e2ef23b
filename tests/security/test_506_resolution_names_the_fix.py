"""Finding: ``infra.resolve_incident`` closes an incident on a verified resolution of its own
probe and gives the resolving fix's claim back — but gate 1 never asked *which* fix
resolved it: with ``fix-1`` claimed, deployed through staging to production (approved,
verified), any agent permitted to coordinate fixes resolved the incident naming a fix that
never existed (``fix-nobody``). The incident's record (and the run graph) said it was
resolved by ``fix-nobody``, and ``fix-1``'s claim stayed held on a resolved incident, so
``fix-1`` could go on deploying under it. Resolving it again naming yet another fix
rewrote who resolved it.
Now a resolution names the fix that holds the incident's claim when one is held
(``fix_lock_not_held``), and an incident already resolved is resolved again only by the fix
recorded as its resolver (``incident_not_open``); the fix's own resolution runs as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cradle_kg.packs import testing
from cradle_kg.records import OutcomeStatus
from tests.security.harbor_world import FIXER, PACK, SECOND, fixed_in_production, outage, submit

WORLD = "w506"

home = testing.fixture(PACK, scope="module")


def _submit(home: testing.PackHome, pid: str, agent: str, tool: str, thing: str,
            arguments: dict[str, Any], environment: str, **action: Any) -> Any:
    return submit(home, WORLD, pid, tool, thing, arguments, environment, agent=agent,
                  **action)


@pytest.fixture(scope="module")
def fixed(home: testing.PackHome) -> Iterator[tuple[Any, str]]:
    """An incident whose fix-1 ran through staging to production, verified there."""
    with outage(home, WORLD) as (h, fx, incident):
        iid = str(incident["id"])
        fixed_in_production(home, WORLD, h, fx, iid)
        yield h, iid

def _resolve(home: testing.PackHome, pid: str, agent: str, iid: str, fix_id: str) -> Any:
    return _submit(home, pid, agent, "infra.resolve_incident", f"incident/{iid}",
                   {"incident_id": iid, "fix_id": fix_id}, "production")


def test_a_resolution_names_the_fix_that_holds_the_claim(
        home: testing.PackHome, fixed: tuple[Any, str]) -> None:
    h, iid = fixed
    other = _resolve(home, "p506-nobody", SECOND, iid, "fix-nobody")
    # before: executed — the incident resolved by `fix-nobody`, fix-1's claim still held
    assert other.status is OutcomeStatus.DENIED, (other.status, other.reasons)
    assert any("fix_lock_not_held" in r for r in other.reasons), other.reasons
    state = h.snapshot()
    assert state["incidents"][iid]["status"] == "open"
    assert state["fix_locks"][iid]["fix_id"] == "fix-1"
    own = _resolve(home, "p506-own", FIXER, iid, "fix-1")
    assert own.status is OutcomeStatus.EXECUTED, own.reasons
    state = h.snapshot()
    assert state["incidents"][iid]["status"] == "resolved"
    assert state["incidents"][iid]["fix_id"] == "fix-1"
    assert iid not in state["fix_locks"]


def test_a_resolved_incident_keeps_its_resolver(
        home: testing.PackHome, fixed: tuple[Any, str]) -> None:
    h, iid = fixed
    if h.snapshot()["incidents"][iid]["status"] != "resolved":  # run alone: fix-1 resolves
        assert _resolve(home, "p506-own2", FIXER, iid, "fix-1").status is \
            OutcomeStatus.EXECUTED
    again = _resolve(home, "p506-again", SECOND, iid, "fix-other")
    # before: executed — the record rewritten to say `fix-other` resolved it
    assert again.status is OutcomeStatus.DENIED, (again.status, again.reasons)
    assert any("incident_not_open" in r for r in again.reasons), again.reasons
    assert h.snapshot()["incidents"][iid]["fix_id"] == "fix-1"
