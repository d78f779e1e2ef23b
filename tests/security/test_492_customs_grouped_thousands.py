"""Finding: the customs extractor did not know a thousands group written with a space (the
SI/ISO way, "1 200 km", also with a no-break or thin space) or an apostrophe (the Swiss way,
"1'200"): in "a 1 200 km range" the pattern ``<number> km range`` matched from the last
group, so the range read was 200 km — a *known* value under the 300 km of 9A112.a (EU
Regulation 2021/821 Annex I, "capable of a range of 300 km"). A BVLOS drone with that range
was classified with no permit, ``permitted_to_finalize``, and its filing executed without
the dual-use approval the same drone written "1,200 km range" waits for.
Now a number grouped by spaces or apostrophes (one to three digits, then groups of exactly
three) is read whole (1200), and a number is never read starting inside such a group.
"""

from __future__ import annotations

import pytest

from cradle_kg.packs import testing

from .customs_lines import PACK, assert_permit_awaited, run_line, task_of

DRONE = ("Unmanned aerial vehicle, fixed wing, maximum take-off weight 20 kg, not designed "
         "for carriage of passengers, BVLOS, endurance 20 min, no aerosol dispensing "
         "system, remote-controlled only, {range}")

home = testing.fixture(PACK, scope="module")


def _line(home: testing.PackHome, rng: str) -> dict[str, object]:
    return run_line(home, DRONE.format(range=rng), task_of("h12-492-", rng))


@pytest.mark.parametrize("rng", ["1 200 km range", "1\u00a0200 km range", "1\u202f200 km range",
                                 "range 1 200 km", "1'200 km range", "1\u2019200 km range",
                                 "1,200 km range"])
def test_a_space_grouped_range_is_read_whole(home: testing.PackHome, rng: str) -> None:
    result = _line(home, rng)
    # before: "1 200 km range" read as 200 km: permits [] and the finalization `executed`
    assert_permit_awaited(result, "EU-2021/821:9A112")


@pytest.mark.parametrize("rng", ["200 km range", "range 20 km"])
def test_a_short_range_drone_is_read_as_before(home: testing.PackHome, rng: str) -> None:
    result = _line(home, rng)
    assert result["status"] == "classified" and list(result["permits_required"]) == []  # type: ignore[call-overload]
