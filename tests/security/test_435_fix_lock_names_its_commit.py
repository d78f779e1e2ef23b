"""Finding: ``infra.uptimeharbor``'s fix lock ("one incident never gets two concurrent
fixes: the fix lock decides which one runs") records the fix's id *and its commit*, but
gate 1 checked only the id: under the claim of ``fix-1`` for commit A, a deploy of any
other commit naming ``fix-1`` passed the rule — another agent whose own claim was refused
(``incident_fix_in_flight``) deployed its commit by naming the holder's fix id — and a
second claim of ``fix-1`` for another commit was answered "acquired" (gate 2 verified it)
while the lock still named A.
Now the lock decides the commit too: a deploy under a fix must be of the commit its claim
names (``fix_commit_mismatch``, denied at gate 1), a claim of a held fix id for another
commit is refused the same way, and acquiring the lock again for another commit fails.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.packs import testing

PACK = Path(__file__).resolve().parents[2] / "packs" / "infra.uptimeharbor"
BASE = json.loads((PACK / "examples" / "good_production_deploy.json").read_text("utf-8"))
HELD = BASE["state"]["fix_locks"]["inc-1"]["commit"]
OTHER = "c" * 40

home = testing.fixture(PACK, scope="module")


def _example(action: dict[str, Any]) -> dict[str, Any]:
    example = copy.deepcopy(BASE)
    example["name"] = "t435"
    example["action"] = {"actor": "harbor-fixer", "incident_id": "inc-1", "fix_id": "fix-1",
                         **action}
    return example


def _run(home: testing.PackHome, example: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = home.entry("adapters:run_example")(home.runtime, example)
    return out


@pytest.mark.parametrize("action", [
    {"kind": "deploy", "env": "staging", "commit": OTHER},
    {"kind": "propose_fix", "commit": OTHER},
])
def test_another_commit_under_a_held_fix_is_denied(home: testing.PackHome,
                                                   action: dict[str, Any]) -> None:
    result = _run(home, _example(action))
    # before: the deploy passed gate 1 (it failed in the tool: no such commit in the
    # example's world), the claim executed — `acquired` under a lock naming another commit
    assert result["outcome"] == "denied", result
    assert "fix_commit_mismatch" in result["codes"], result


def test_the_claimed_commit_is_still_the_fixs(home: testing.PackHome) -> None:
    result = _run(home, _example({"kind": "propose_fix", "commit": HELD}))
    assert result["outcome"] == "executed", result


def test_the_lock_is_not_taken_again_for_another_commit(tmp_path: Path) -> None:
    with testing.pack_home(PACK, tmp_path / "home") as h:
        harbor_for = h.entry("governed.worlds:harbor_for")
        acquire = h.entry("harbor:acquire_fix_lock")
        harbor = harbor_for(h.root, "w435")
        with harbor.store.transaction() as state:
            state["incidents"]["inc-1"] = {"id": "inc-1", "env": "production",
                                           "status": "open"}
        assert acquire(harbor, "inc-1", "fix-1", HELD) is True
        assert acquire(harbor, "inc-1", "fix-1", HELD) is True
        assert acquire(harbor, "inc-1", "fix-1", OTHER) is False  # before: True
        assert harbor.snapshot()["fix_locks"]["inc-1"]["commit"] == HELD
