"""Finding: (left open by ``test_494``) the customs extractor read the first of two values a
phrase gives one attribute: "flight time 45 min loaded, 75 min empty" read an endurance of
45 min, "range 200 km (320 km with extended battery)" a range of 200 km, "maximum take-off
weight 6 kg (8 kg with floats)" a weight of 6 kg. EU Regulation 2021/821 Annex I measures
"a maximum 'endurance'" (9A012.a) and what a UAV is "capable of" (9A112.a: "a range of
300 km"; 9A112.b: an aerosol system "with a capacity greater than 20 litres"; 9A012.a.1.b:
"designed to … have stable controlled flight in wind gusts equal to or exceeding 46,3
km/h"): a drone flying 75 minutes empty has a maximum endurance of 75 minutes. So an
out-of-sight drone with gusts under 46,3 km/h and a 75-minute empty endurance was filed
with no 9A012 permit (``executed``), and one capable of 320 km with its extended battery
with no 9A112 permit. A weight decides the HS subheading band, where neither value is the
safe one: the line was classified 8806.92 (up to 7 kg) and filed on a weight the same
phrase contradicts.

Now every value of the attribute stated in the phrase is read (``value, value`` /
``value (value …)`` / ``value / value`` / ``value or value``, each with the attribute's kind
of unit, a few qualifying words allowed in between, another quantity's label not): for the
Annex's thresholds (endurance, range, aerosol capacity, gust tolerance) the largest is the
attribute — the one that can trigger the control —, quoted with the whole phrase; for a
weight each value is a candidate, and the two disagreeing, the line asks for it.
"""

from __future__ import annotations

import pytest

from cradle_kg.packs import testing

from .customs_lines import PACK, assert_permit_awaited, run_line

DRONE = ("Unmanned aerial vehicle, maximum take-off weight 20 kg, not designed for carriage "
         "of passengers, beyond visual line of sight operation, autonomous flight, wind "
         "resistance 10 m/s, no aerosol dispensing system, {rest}")

home = testing.fixture(PACK, scope="module")


def _line(home: testing.PackHome, n: int, rest: str,
          drone: str = DRONE) -> dict[str, object]:
    return run_line(home, drone.format(rest=rest), f"h9-529-{n}")


@pytest.mark.parametrize("n,endurance", [
    (1, "flight time 45 min loaded, 75 min empty"),
    (2, "endurance 45 min (75 min without payload)"),
    (3, "flight time 45 min / 1.5 h"),
    (4, "endurance up to 45 min with payload, or 80 min without"),
])
def test_the_largest_endurance_needs_its_permit(home: testing.PackHome, n: int,
                                                endurance: str) -> None:
    result = _line(home, n, f"{endurance}, range 20 km")
    # before: permits [] (endurance 45 min, gusts under 46,3 km/h) and the filing executed
    assert_permit_awaited(result, "EU-2021/821:9A012")


@pytest.mark.parametrize("n,rng", [
    (5, "range 200 km (320 km with extended battery)"),
    (6, "max. range 250 km standard, 310 km with auxiliary tank"),
])
def test_the_largest_range_needs_its_permit(home: testing.PackHome, n: int,
                                            rng: str) -> None:
    result = _line(home, n, f"endurance 45 min, {rng}")
    assert_permit_awaited(result, "EU-2021/821:9A112")


def test_a_payload_is_not_a_second_weight(home: testing.PackHome) -> None:
    drone = DRONE.replace("maximum take-off weight 20 kg",
                          "maximum take-off weight 20 kg, 7 kg payload")
    result = _line(home, 13, "endurance 20 min, range 20 km", drone)
    assert result["status"] == "classified" and result["hs_code"] == "8806.93", result


def test_two_weights_are_asked_for(home: testing.PackHome) -> None:
    drone = DRONE.replace("maximum take-off weight 20 kg",
                          "maximum take-off weight 6 kg (8 kg with floats)")
    result = _line(home, 7, "endurance 20 min, range 20 km", drone)
    # before: `classified` 8806.92 (up to 7 kg) and the filing executed
    assert result["status"] == "rejected", result
    governed = result["governed"]
    assert isinstance(governed, dict)
    assert any("contradictory facts for `maximum_takeoff_weight`" in r
               for r in governed["classify"]["reasons"]), result
    finalize = governed["finalize"]
    assert finalize is None or finalize["outcome"] != "executed"


@pytest.mark.parametrize("n,rest", [
    (8, "endurance 45 min, charging time 90 min, range 20 km"),
    (9, "flight time 45 min, range 20 km (radio range 60 km)"),
    (10, "endurance 45 min (hover), range 20 km"),
    (11, "endurance 45 min, range 250 km, 320 km/h top speed"),
    (12, "endurance 45 min, 90 min charging time, range 20 km"),
])
def test_another_quantity_is_not_a_second_value(home: testing.PackHome, n: int,
                                                rest: str) -> None:
    result = _line(home, n, rest)
    governed = result["governed"]
    assert isinstance(governed, dict)
    assert result["status"] == "classified" and list(result["permits_required"]) == [], result  # type: ignore[call-overload]
    assert governed["finalize"]["outcome"] == "executed"
