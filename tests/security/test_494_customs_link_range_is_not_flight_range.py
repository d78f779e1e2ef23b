"""Finding: the customs extractor read the range of a drone's radio link as the range of the
drone: "datalink range 30 km", "video transmission range 30 km", "control range 30 km"
matched ``range <number> km`` and gave ``maximum_range = 30`` — a *known* value under the
300 km of 9A112.a (EU Regulation 2021/821 Annex I, "capable of a range of 300 km"). A
4-hour drone whose flight range the text never states was classified with no permit,
``permitted_to_finalize``, and its filing executed without the range ever being asked.
Now the range of a link (data/radio/control/video/transmission/telemetry/signal/FPV/
communication/detection) is read as no attribute: the flight range stays unknown and the
line asks for it. "Flight distance" is read as the flight range, so a drone stating one
(as camera-drone spec sheets do) is classified as before.
"""

from __future__ import annotations

import pytest

from cradle_kg.packs import testing

from .customs_lines import PACK, run_line, task_of

DRONE = ("Unmanned aerial vehicle, maximum take-off weight 20 kg, not designed for carriage "
         "of passengers, VLOS only, endurance 4 h, no aerosol dispensing system, "
         "remote-controlled only, {range}")

home = testing.fixture(PACK, scope="module")


def _line(home: testing.PackHome, rng: str) -> dict[str, object]:
    return run_line(home, DRONE.format(range=rng), task_of("h12-494-", rng))


@pytest.mark.parametrize("rng", ["datalink range 30 km", "video transmission range 30 km",
                                 "control range 30 km", "radio range: 30 km"])
def test_a_link_range_is_not_the_flight_range(home: testing.PackHome, rng: str) -> None:
    result = _line(home, rng)
    governed = result["governed"]
    assert isinstance(governed, dict)
    # before: `classified`, permits [] and the finalization `executed`
    assert result["status"] == "needs_clarification", result
    assert list(result["missing_facts"]) == ["maximum_range"]  # type: ignore[call-overload]
    finalize = governed["finalize"]  # nothing is filed while a fact is asked for
    assert finalize is None or finalize["outcome"] != "executed"


@pytest.mark.parametrize("rng", ["range 30 km", "max flight distance 30 km",
                                 "flight range 30 km, control range 15 km"])
def test_a_flight_range_is_read(home: testing.PackHome, rng: str) -> None:
    result = _line(home, rng)
    assert result["status"] == "classified" and list(result["permits_required"]) == []  # type: ignore[call-overload]


def test_a_long_flight_distance_needs_its_permit(home: testing.PackHome) -> None:
    result = _line(home, "maximum flight distance 320 km")
    assert list(result["permits_required"]) == ["EU-2021/821:9A112"], result  # type: ignore[call-overload]
