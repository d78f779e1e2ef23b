"""Finding: ``infra.uptimeharbor``'s rollback gave an incident's fix claim back whenever its
arguments *named* the claim's incident and fix ("undoing a fix's deploy abandons the fix:
its claim goes back"), whatever the rollback undid. With ``fix-1`` claimed for the fix
commit and deployed to staging, a production rollback naming ``fix-1`` — which put the
good release back over the *outage* commit, and never touched ``fix-1``'s commit — released
the claim; a second agent then claimed ``fix-2`` for another commit of the same incident
while ``fix-1`` still ran in staging: two fixes in flight for one incident, which the lock
exists to prevent ("one incident never gets two concurrent fixes").
Now a rollback gives the claim back only when what it took out of the environment (the
commit that ran there before it) is the commit the claim names: the compensation of the
fix's own failed deploy (and any rollback of the fix's commit) releases it as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cradle_kg.packs import testing
from cradle_kg.records import OutcomeStatus
from tests.security.harbor_world import FIXER, PACK, SECOND, outage, submit

WORLD = "w504"

home = testing.fixture(PACK, scope="module")


@pytest.fixture(scope="module")
def world(home: testing.PackHome) -> Iterator[tuple[Any, Any, str]]:
    with outage(home, WORLD) as (h, fx, incident):
        yield h, fx, str(incident["id"])


def _submit(home: testing.PackHome, pid: str, agent: str, tool: str, thing: str,
            arguments: dict[str, Any], environment: str) -> Any:
    return submit(home, WORLD, pid, tool, thing, arguments, environment, agent=agent)


def test_a_rollback_of_another_commit_keeps_the_fixs_claim(
        home: testing.PackHome, world: tuple[Any, Any, str]) -> None:
    h, fx, iid = world
    fix = fx["fix"]
    claimed = _submit(home, "p504-claim", FIXER, "infra.claim_fix", f"incident/{iid}",
                      {"incident_id": iid, "fix_id": "fix-1", "commit": fix}, "local")
    assert claimed.status is OutcomeStatus.EXECUTED, claimed.reasons
    staged = _submit(home, "p504-staging", FIXER, "infra.deploy", "staging",
                     {"env": "staging", "commit": fix, "incident_id": iid, "fix_id": "fix-1"},
                     "staging")
    assert staged.status is OutcomeStatus.EXECUTED, staged.reasons
    # production still runs the outage commit: a rollback there takes *it* out, not fix-1
    back = _submit(home, "p504-rollback", FIXER, "infra.rollback", "production",
                   {"env": "production", "incident_id": iid, "fix_id": "fix-1"}, "production")
    assert back.status is OutcomeStatus.EXECUTED, back.reasons
    assert h.store.env("production")["commit"] == fx["good"]
    assert h.store.env("staging")["commit"] == fix  # fix-1 still runs where it was deployed
    lock = h.snapshot()["fix_locks"].get(iid)
    # before: None — the claim was given back by a rollback that never undid fix-1
    assert lock is not None and lock["fix_id"] == "fix-1", lock
    second = _submit(home, "p504-claim2", SECOND, "infra.claim_fix", f"incident/{iid}",
                     {"incident_id": iid, "fix_id": "fix-2", "commit": fx["fix_staging_only"]},
                     "local")
    # before: executed — a second fix in flight for the incident
    assert second.status is OutcomeStatus.DENIED, (second.status, second.reasons)
    assert any("incident_fix_in_flight" in r for r in second.reasons), second.reasons


def test_rolling_back_the_fixs_commit_still_gives_its_claim_back(
        home: testing.PackHome, world: tuple[Any, Any, str]) -> None:
    h, fx, iid = world
    back = _submit(home, "p504-undo", SECOND, "infra.rollback", "staging",
                   {"env": "staging", "incident_id": iid, "fix_id": "fix-1"}, "staging")
    assert back.status is OutcomeStatus.EXECUTED, back.reasons
    assert h.store.env("staging")["commit"] == fx["good"]
    assert iid not in h.snapshot()["fix_locks"]
    again = _submit(home, "p504-claim3", SECOND, "infra.claim_fix", f"incident/{iid}",
                    {"incident_id": iid, "fix_id": "fix-2", "commit": fx["fix_staging_only"]},
                    "local")
    assert again.status is OutcomeStatus.EXECUTED, again.reasons
