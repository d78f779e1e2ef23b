"""``pack init travel.airline --data DIR``: the records of the three files must agree.

Finding (tenth attack review): every record of a data directory was checked field by
field (``test_52``, ``tests/packs/test_airline_data_checks.py``), but not against the
others. The rules read them together, each from its own side:

- a compensation is decided on the reservations the *customer's* record lists
  (``users.json``: ``reservations``), an owner check on the *reservation's* ``user_id``.
  A user listing another customer's reservation (``lucas_hernandez_8985``, a regular member
  with no cancelled or delayed flight, listing ``GYJ4P7`` of ``noah_silva_2256``: insured,
  three passengers, a cancelled flight) was loaded, and the agent's
  ``send_certificate(lucas_hernandez_8985, 300)`` for "my flight was cancelled" executed
  unattended — the verifier even recorded the statement as Verified;
- a segment names a flight and a day ``flights.json`` must hold: one it does not is no
  status at all, which the cancellation rule reads as "not flown".

Now such a directory is one ``error:`` line naming the file, the record and the field,
exit 2, and the home as it was. The benchmark's own data holds (every list and segment
agrees with the other files).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.packs.test_airline_data_checks import _subset, _write, refused_and_home_kept
from tests.packs.test_pack_init import invoke

Data = dict[str, dict[str, Any]]


def _another_customers_reservation(users: Data, flights: Data, reservations: Data) -> str:
    """The first user now also lists a reservation of another customer."""
    first = sorted(users)[0]
    theirs = next(rid for rid, r in sorted(reservations.items()) if r["user_id"] != first)
    users[first]["reservations"].append(theirs)
    return "`reservations["


def _unknown_reservation(users: Data, flights: Data, reservations: Data) -> str:
    users[sorted(users)[0]]["reservations"].append("ZZZZZZ")
    return "`ZZZZZZ`"


def _segment_of_no_flight(users: Data, flights: Data, reservations: Data) -> str:
    reservations[sorted(reservations)[0]]["flights"][0]["flight_number"] = "HAT999"
    return "`flights[0].flight_number`"


def _segment_on_a_day_not_flown(users: Data, flights: Data, reservations: Data) -> str:
    reservations[sorted(reservations)[0]]["flights"][0]["date"] = "2031-01-01"
    return "`flights[0].date`"


CASES = {
    "users:another-customers-reservation": ("users", _another_customers_reservation),
    "users:no-such-reservation": ("users", _unknown_reservation),
    "reservations:segment-of-no-flight": ("reservations", _segment_of_no_flight),
    "reservations:segment-on-a-day-not-flown": ("reservations", _segment_on_a_day_not_flown),
}


@pytest.mark.parametrize("case", list(CASES))
def test_records_that_disagree_are_one_line_and_leave_the_home(tmp_path: Path,
                                                               case: str) -> None:
    file, change = CASES[case]
    refused_and_home_kept(tmp_path, file, change)


def test_a_customer_listing_anothers_reservation_gets_no_certificate(tmp_path: Path) -> None:
    """The attack end to end: the directory that would have paid a regular member a
    certificate for another customer's insured, cancelled trip is refused."""
    users, flights, reservations = _subset()
    # an insured reservation with a cancelled flight, and a regular member of another
    # customer's with none of their own
    def status(seg: dict[str, Any]) -> Any:
        return flights.get(seg["flight_number"], {}).get("dates", {}).get(
            seg["date"], {}).get("status")
    victim = next((rid for rid, r in sorted(reservations.items())
                   if any(status(s) == "cancelled" for s in r["flights"])), None)
    if victim is None:  # the subset has none: take one from the whole benchmark's shape
        victim = sorted(reservations)[0]
        seg = reservations[victim]["flights"][0]
        flights[seg["flight_number"]]["dates"][seg["date"]] = {"status": "cancelled"}
    reservations[victim]["insurance"] = "yes"
    claimant = next(uid for uid in sorted(users)
                    if uid != reservations[victim]["user_id"])
    users[claimant]["membership"] = "regular"
    for rid in users[claimant]["reservations"]:
        reservations[rid]["insurance"] = "no"
        reservations[rid]["cabin"] = "economy"
    users[claimant]["reservations"].append(victim)
    data = tmp_path / "data"
    _write(data, users, flights, reservations)
    code, out = invoke("pack", "init", "travel.airline", "--data", str(data), "--home",
                       str(tmp_path / "h"))
    assert code == 2, out
    assert f"record `{claimant}`" in out and victim in out, out
    assert not (tmp_path / "h" / "travel-airline" / "airline.sqlite").exists()
    assert not (tmp_path / "h" / "config.json").exists() or "travel.airline" not in json.loads(
        (tmp_path / "h" / "config.json").read_text()).get("packs", [])
