"""``travel.airline``: a passenger is booked with a name and a date of birth.

Finding (twenty-fourth review, the airline pack against ``wiki.md``): "The agent needs to
collect the first name, last name, and date of birth for each passenger." The pack checked
that each passenger object has the three keys and that they are strings (the benchmark's
schema, A0) — not that they hold a name and a date. The benchmark's task 0 booking
(mia_li_3668, JFK → SEA) with the passenger's ``dob`` sent as ``""`` — the agent never
asked — executed, and so did ``"04/05/1990"`` (the benchmark's schema: "The date of birth of
the passenger in the format 'YYYY-MM-DD', such as '1990-01-01'"), and task 4's change of
passengers on ``FQ8APE`` to a ``"1970-02-30"`` or a ``""`` last name: stored as sent,
passengers the airline cannot identify.

Now each passenger of a booking or a change of passengers has a first and a last name that
are not blank and a ``dob`` that is a calendar date ``YYYY-MM-DD`` not after today (the
domain clock): ``airline_passenger_details``. The benchmark's reference calls (task 0, task
4) still execute.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .airline_calls import airline_runtime, reservation, segments, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

MIA = {"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}
OMAR = {"first_name": "Omar", "last_name": "Rossi", "dob": "1970-06-06"}


def _booking(passenger: dict[str, str]) -> dict[str, Any]:
    return {  # the benchmark's task 0 reference booking
        "user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA",
        "flight_type": "one_way", "cabin": "economy",
        "flights": segments(("HAT136", "2024-05-20"), ("HAT039", "2024-05-20")),
        "passengers": [passenger],
        "payment_methods": [{"payment_id": "certificate_7504069", "amount": 250},
                            {"payment_id": "credit_card_4421486", "amount": 5}],
        "total_baggages": 3, "nonfree_baggages": 0, "insurance": "no"}


def test_a_booking_without_a_date_of_birth_is_refused(tmp_path: Path) -> None:
    refused = ("denied", ["airline_passenger_details"])
    with airline_runtime(tmp_path) as rt:
        for bad in ({**MIA, "dob": ""}, {**MIA, "dob": "04/05/1990"},
                    {**MIA, "dob": "2024-05-16"}, {**MIA, "first_name": "  "}):
            assert submit(rt, "book_reservation", "mia_li_3668", _booking(bad)) == refused, bad
        assert submit(rt, "book_reservation", "mia_li_3668", _booking(MIA)) == ("executed", [])


def test_a_change_of_passengers_to_no_date_is_refused(tmp_path: Path) -> None:
    def change(passenger: dict[str, str]) -> tuple[str, list[str]]:
        return submit(rt, "update_reservation_passengers", "omar_rossi_1241",
                      {"reservation_id": "FQ8APE", "passengers": [passenger]})

    with airline_runtime(tmp_path) as rt:
        before = reservation(rt, "FQ8APE")
        for bad in ({**OMAR, "dob": "1970-02-30"}, {**OMAR, "last_name": ""}):
            assert change(bad) == ("denied", ["airline_passenger_details"]), bad
        assert reservation(rt, "FQ8APE") == before
        assert change(OMAR) == ("executed", [])  # the benchmark's task 4
