"""Finding: the customs pack's keyword extractor read a number written with a dot before a
three-digit group as a decimal — ``range up to 1.000 km`` became a range of 1 km — while it
reads ``1,000 km`` as a thousand. So a BVLOS, autonomous drone whose datasheet states its
range the continental way was classified with a *known* range far under 9A112's 300 km, no
permit, ``permitted_to_finalize``: its filing ran without the dual-use approval that the
same drone written ``1,000 km`` waits for.
Now: ``d.ddd`` (one to three digits, a dot, exactly three digits) is ambiguous — a decimal
or a thousands group — and the extractor reads no value from it: the attribute stays
unknown, the classification asks for it (``needs_clarification``, the fact named) and
nothing is filed. ``1,000`` (the pack's documented thousands form) and ``1.5`` are read as
before.
"""

from __future__ import annotations

import pytest

from cradle_kg.packs import testing

from .customs_lines import PACK, run_line

DRONE = ("Unmanned aerial vehicle, quadcopter, maximum take-off weight 5 kg, not designed "
         "for carriage of passengers, BVLOS, flight time 20 min, no aerosol dispensing "
         "system, autonomous flight, range up to {range}")

home = testing.fixture(PACK, scope="module")


def _line(home: testing.PackHome, written: str, task: str) -> dict[str, object]:
    return run_line(home, DRONE.format(range=written), task)


def test_a_range_written_with_a_dotted_thousands_group_is_not_a_small_range(
        home: testing.PackHome) -> None:
    result = _line(home, "1.000 km", "h6-dotted")
    governed = result["governed"]
    assert isinstance(governed, dict)
    # before: status `classified`, no permit, the filing executed without an approval
    assert result["status"] == "needs_clarification", result
    assert result["missing_facts"] == ["maximum_range"]
    assert governed["finalize"] is None
    assert result["permits_required"] == []


@pytest.mark.parametrize(("written", "permits"), [
    ("1,000 km", ["EU-2021/821:9A112"]),   # the documented thousands form
    ("1.5 km", []),                        # a decimal
    ("300 km", ["EU-2021/821:9A112"]),
])
def test_unambiguous_numbers_are_read_as_before(home: testing.PackHome, written: str,
                                                permits: list[str]) -> None:
    result = _line(home, written, "h6-" + written.replace(" ", "-").replace(",", "c"))
    assert result["status"] == "classified", result
    assert list(result["permits_required"]) == permits  # type: ignore[call-overload]
