"""Finding: ``infra.uptimeharbor``'s gate-2 verifier of a deploy recorded what its probes
saw — the incident's own probe passing, the service healthy — as verifications *of the
commit the deploy asked for*, whether or not that commit was running. A dry-run deploy
(which changes nothing; gate 2 still reads) of the very commit that caused the outage to
staging, where the good release still ran, recorded a verified staging ``incident_resolved``
of the outage commit for the incident; gate 1's production rules
(``production-runs-verified-commits-only``, ``cited-staging-verification``) then took it as
the staging proof, and the production deploy of the outage commit went to a person for
approval with a "verified" staging resolution it never had.
Now a verification names the commit it saw running: the one asked for only when the
deploy's commit check found it in git, the state file, the checkout and live; otherwise
none. A dry run, or a deploy whose commit is not the one running, proves nothing about the
commit asked for, and the production deploy citing nothing is denied at gate 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cradle_kg.packs import testing
from cradle_kg.records import OutcomeStatus
from tests.security.harbor_world import PACK, outage, submit

WORLD = "w433"

home = testing.fixture(PACK, scope="module")


@pytest.fixture(scope="module")
def world(home: testing.PackHome) -> Iterator[tuple[Any, Any, dict[str, Any]]]:
    with outage(home, WORLD) as found:
        yield found


def _submit(home: testing.PackHome, pid: str, tool: str, thing: str, arguments: dict[str, Any],
            environment: str, **action: Any) -> Any:
    return submit(home, WORLD, pid, tool, thing, arguments, environment, **action)


def test_a_dry_run_is_no_staging_proof_for_production(
        home: testing.PackHome, world: tuple[Any, Any, dict[str, Any]]) -> None:
    h, fx, incident = world
    iid, outage = str(incident["id"]), fx["outage"]
    staging_resolution = home.entry("harbor:staging_resolution")
    claimed = _submit(home, "p433-claim", "infra.claim_fix", f"incident/{iid}",
                      {"incident_id": iid, "fix_id": "fix-433", "commit": outage}, "local")
    assert claimed.status is OutcomeStatus.EXECUTED, claimed.reasons
    dry = _submit(home, "p433-dry", "infra.deploy", "staging",
                  {"env": "staging", "commit": outage, "incident_id": iid,
                   "fix_id": "fix-433"}, "staging", dry_run=True)
    assert dry.status is not OutcomeStatus.EXECUTED or dry.verification is not None
    assert h.store.env("staging")["commit"] == fx["good"]  # nothing was deployed
    proof = staging_resolution(h.snapshot(), outage, iid)
    # before: {'verifier': 'incident_resolved', 'status': 'verified', 'commit': <outage>, …}
    assert proof is None, proof
    cited = [v["id"] for v in h.snapshot()["verifications"]
             if v["verifier"] == "incident_resolved" and v["incident_id"] == iid]
    production = _submit(home, "p433-prod", "infra.deploy", "production",
                         {"env": "production", "commit": outage, "incident_id": iid,
                          "fix_id": "fix-433",
                          **({"staging_verification": cited[-1]} if cited else {})},
                         "production", risk_level="high")
    # before: awaiting_approval, the outage commit offered to a person as verified in staging
    assert production.status is OutcomeStatus.DENIED, (production.status, production.reasons)


def test_a_real_deploy_still_proves_its_commit(
        home: testing.PackHome, world: tuple[Any, Any, dict[str, Any]]) -> None:
    h, fx, incident = world
    iid, fix = str(incident["id"]), fx["fix"]
    released = _submit(home, "p433-release", "infra.rollback", "staging",
                       {"env": "staging", "incident_id": iid, "fix_id": "fix-433"},
                       "staging", dry_run=True)
    assert released.status is not None
    with h.store.transaction() as state:  # the test hands the incident's slot to the fix
        state["fix_locks"].pop(iid, None)
    claimed = _submit(home, "p433-claim2", "infra.claim_fix", f"incident/{iid}",
                      {"incident_id": iid, "fix_id": "fix-433b", "commit": fix}, "local")
    assert claimed.status is OutcomeStatus.EXECUTED, claimed.reasons
    deployed = _submit(home, "p433-real", "infra.deploy", "staging",
                       {"env": "staging", "commit": fix, "incident_id": iid,
                        "fix_id": "fix-433b"}, "staging")
    assert deployed.status is OutcomeStatus.EXECUTED, deployed.reasons
    proof = home.entry("harbor:staging_resolution")(h.snapshot(), fix, iid)
    assert proof is not None and proof["status"] == "verified"
