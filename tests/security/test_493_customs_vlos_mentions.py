"""Finding: (left open by ``test_434``) the customs extractor read *any* mention of
``VLOS`` as "within visual line of sight" (``beyond_visual_line_of_sight = false``),
whatever the words around it said: "operation beyond VLOS", "no VLOS restrictions",
"without VLOS limitations", "not VLOS-restricted", "VLOS not required", "does not require
VLOS". A 90-minute drone so described (9A012.a.2 of EU Regulation 2021/821 Annex I: out of
the operator's natural vision, endurance of 1 hour or greater) was classified with no
permit, ``permitted_to_finalize``, and its filing executed without the dual-use approval.
Now "VLOS" reads ``false`` only where the text states flight within sight — the list item
"VLOS", "VLOS only", "within/in VLOS", "limited/restricted to VLOS"; "beyond VLOS" and a
lifted VLOS limit read ``true``; any other mention reads nothing, so the attribute stays
unknown and the line waits for a clarification — never a filing without the permit.
"""

from __future__ import annotations

import pytest

from cradle_kg.packs import testing

from .customs_lines import PACK, assert_permit_awaited, run_line, task_of

DRONE = ("Unmanned aerial vehicle, maximum take-off weight 20 kg, not designed for carriage "
         "of passengers, endurance 90 min, no aerosol dispensing system, remote-controlled "
         "only, range 20 km, {sight}")

home = testing.fixture(PACK, scope="module")


def _line(home: testing.PackHome, sight: str) -> dict[str, object]:
    return run_line(home, DRONE.format(sight=sight), task_of("h12-493-", sight))


@pytest.mark.parametrize("sight", ["operation beyond VLOS", "no VLOS restrictions",
                                   "without VLOS limitations", "not VLOS-restricted"])
def test_an_out_of_sight_drone_needs_its_permit(home: testing.PackHome, sight: str) -> None:
    result = _line(home, sight)
    # before: permits [] and the finalization `executed`
    assert_permit_awaited(result, "EU-2021/821:9A012")


@pytest.mark.parametrize("sight", ["VLOS not required", "does not require VLOS"])
def test_an_unclear_mention_is_not_read_as_within_sight(home: testing.PackHome,
                                                        sight: str) -> None:
    result = _line(home, sight)
    # before: `classified` with permits [] (read as within sight)
    assert result["status"] == "needs_clarification", result
    assert list(result["missing_facts"]) == ["beyond_visual_line_of_sight"]  # type: ignore[call-overload]


@pytest.mark.parametrize("sight", ["VLOS", "VLOS only", "within VLOS", "restricted to VLOS",
                                   "within visual line of sight"])
def test_a_within_sight_drone_is_read_as_before(home: testing.PackHome, sight: str) -> None:
    result = _line(home, sight)
    assert result["status"] == "classified" and list(result["permits_required"]) == []  # type: ignore[call-overload]
