"""Finding: ``infra.uptimeharbor`` takes the world a tool acts on from the proposal's
target (``harbor:<world>/<thing>``) and opened a harbor for any name, creating its folder:
a *read-only* ``infra.detect_outage`` on ``harbor:../production`` — permitted to any agent
by ``read-any-environment`` — made ``<home>/harbor/`` (the world ``..`` is the home
itself), one on ``harbor:nowhere-1/production`` made ``<home>/uptimeharbor/nowhere-1/``,
and each new name stayed in the pack's cache of harbors for the life of the process (a
folder and an object per name an agent writes).
Now a target names a world that is there: a name of letters, digits, ``.``, ``_``, ``-``
(not ``.`` or ``..``, nothing past the pack's folder) whose harbor exists; any other is an
unknown name — the read-only call fails with that reason, a change is denied at gate 1 —
and nothing is created. The worlds the pack's own runners set up act as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.packs import testing
from cradle_kg.records import OutcomeStatus

PACK = Path(__file__).resolve().parents[2] / "packs" / "infra.uptimeharbor"
MONITOR = "agent:harbor-monitor"
FIXER = "agent:harbor-fixer"

home = testing.fixture(PACK, scope="module")


@pytest.fixture(scope="module")
def identities(home: testing.PackHome) -> testing.PackHome:
    home.entry("adapters:ensure_identities")(home.runtime)
    return home


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if "journal" not in p.name and not p.name.startswith(".")}


@pytest.mark.parametrize("world", ["..", ".", "nowhere-1", "a b", "Ü"])
def test_a_read_only_probe_of_an_unknown_world_creates_nothing(
        identities: testing.PackHome, world: str) -> None:
    home = identities
    before = _tree(home.root)
    out = home.submit("infra.detect_outage", {"env": "production"}, agent=MONITOR,
                      target=f"harbor:{world}/production", environment="production")
    created = sorted(_tree(home.root) - before)
    # before: `harbor`, `harbor/state…` (world `..`), `uptimeharbor/nowhere-1/harbor` …
    assert not [c for c in created if "harbor" in c], created
    assert out.status is not OutcomeStatus.EXECUTED
    assert any("world" in r for r in out.reasons), out.reasons


def test_a_change_in_an_unknown_world_is_denied(identities: testing.PackHome) -> None:
    home = identities
    out = home.submit("infra.claim_fix", {"incident_id": "inc-1", "fix_id": "fix-1",
                                          "commit": "a" * 40},
                      agent=FIXER, target="harbor:../incident/inc-1")
    assert out.status is OutcomeStatus.DENIED, out.reasons
    assert not (home.root / "harbor").exists()


def test_a_world_the_pack_set_up_is_used(identities: testing.PackHome) -> None:
    """A rule example's world (made by the pack's runner) is one a target may name."""
    home = identities
    example = json.loads((PACK / "examples" / "good_first_fix_proposal.json").read_text(
        encoding="utf-8"))
    result = home.entry("adapters:run_example")(home.runtime, example)
    assert result["outcome"] == "executed", result
