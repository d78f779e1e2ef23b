"""``travel.airline``: an itinerary whose dates go back is another trip.

Finding (twenty-fourth review, the airline pack against ``wiki.md``): "Other reservations
can be modified without changing the origin, destination, and trip type" (U2) and "The
agent must first obtain the user id, then ask for the trip type, origin, destination" (R8:
a booking is that trip) were checked on the places of the flights alone — they connect,
start at the origin, come back through the destination. Their dates were not read: the
round trip ``SF5VA1`` (olivia_moore_2080, PHL → DEN on 2024-05-23, back on 2024-05-30)
had its return moved to 2024-05-16, a week *before* the outbound, and it executed — flown
in date order the trip now starts in Denver, goes to Philadelphia and back: origin and
destination swapped. A one-way JFK → SEA booked with its connection ATL → SEA dated the
day before JFK → ATL executed too (flown in date order it is no trip from JFK).

Now the segments' dates may not go back along the list (the same day is kept: the
benchmark's own data holds same-day returns listed before their outbound lands, so the
clock times are not compared): ``airline_route_changed`` / ``airline_itinerary``. The
careful calls — the return moved to a later day, the benchmark's own reference booking
(task 0) — still execute.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .airline_calls import airline_runtime, reservation, segments, submit

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_a_return_moved_before_its_outbound_is_refused(tmp_path: Path) -> None:
    uid, gift = "olivia_moore_2080", "gift_card_7002574"

    def change(return_date: str) -> tuple[str, list[str]]:
        return submit(rt, "update_reservation_flights", uid, {
            "reservation_id": "SF5VA1", "cabin": "economy",
            "flights": segments(("HAT076", "2024-05-23"), ("HAT080", return_date)),
            "payment_id": gift})

    with airline_runtime(tmp_path) as rt:
        before = reservation(rt, "SF5VA1")
        assert change("2024-05-16") == ("denied", ["airline_route_changed"])
        assert reservation(rt, "SF5VA1") == before
        assert change("2024-05-24") == ("executed", [])  # a later return: the same trip
        assert '"date": "2024-05-24"' in reservation(rt, "SF5VA1")


def test_a_booking_whose_connection_flies_the_day_before_is_refused(tmp_path: Path) -> None:
    uid = "mia_li_3668"
    booking = {  # the benchmark's task 0 reference booking, its connection a day earlier
        "user_id": uid, "origin": "JFK", "destination": "SEA", "flight_type": "one_way",
        "cabin": "economy", "flights": segments(("HAT136", "2024-05-20"),
                                                ("HAT039", "2024-05-19")),
        "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
        "payment_methods": [{"payment_id": "credit_card_4421486", "amount": 152 + 198}],
        "total_baggages": 3, "nonfree_baggages": 0, "insurance": "no"}
    with airline_runtime(tmp_path) as rt:
        assert submit(rt, "book_reservation", uid, booking) == (
            "denied", ["airline_itinerary"])
        reference = {**booking, "flights": segments(("HAT136", "2024-05-20"),
                                                    ("HAT039", "2024-05-20")),
                     "payment_methods": [{"payment_id": "certificate_7504069", "amount": 250},
                                         {"payment_id": "credit_card_4421486", "amount": 5}]}
        assert submit(rt, "book_reservation", uid, reference) == ("executed", [])
