"""Finding: the customs extractor read a statement that a drone may fly out of sight as its
opposite: "no BVLOS restrictions", "without BVLOS limitations" matched the negation
``(no|without) BVLOS`` (not beyond visual line of sight) and "not limited to VLOS" matched
``VLOS`` (within sight) — the words after or before were not looked at. A 90-minute drone
so described was classified with ``beyond_visual_line_of_sight = false``: 9A012 did not
apply, no permit, ``permitted_to_finalize``, and its filing executed without the dual-use
approval the same drone written "BVLOS" waits for.
Now those phrasings are read first, as what they say (out of sight: ``true``), so the
negations no longer take their words; "not BVLOS" and "VLOS only" still read ``false``.
"""

from __future__ import annotations

import pytest

from cradle_kg.packs import testing

from .customs_lines import PACK, assert_permit_awaited, run_line, task_of

DRONE = ("Unmanned aerial vehicle, quadcopter, maximum take-off weight 5 kg, not designed "
         "for carriage of passengers, {sight}, endurance 90 min, no aerosol dispensing "
         "system, remote-controlled only, range 20 km")

home = testing.fixture(PACK, scope="module")


def _line(home: testing.PackHome, sight: str) -> dict[str, object]:
    return run_line(home, DRONE.format(sight=sight), task_of("h6-434-", sight))


@pytest.mark.parametrize("sight", ["no BVLOS restrictions", "without BVLOS limitations",
                                   "not limited to VLOS", "BVLOS"])
def test_an_out_of_sight_drone_needs_its_permit(home: testing.PackHome, sight: str) -> None:
    result = _line(home, sight)
    # before: permits [] and the finalization `executed` for the first three
    assert_permit_awaited(result, "EU-2021/821:9A012")


@pytest.mark.parametrize("sight", ["not BVLOS", "VLOS only"])
def test_a_within_sight_drone_is_read_as_before(home: testing.PackHome, sight: str) -> None:
    result = _line(home, sight)
    assert result["status"] == "classified" and list(result["permits_required"]) == []  # type: ignore[call-overload]
