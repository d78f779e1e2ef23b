"""``travel.airline``: a change of cabin the API would not make is not executed as one.

Finding (twenty-fourth review, the airline pack against ``wiki.md``): "Change cabin: all
reservations … can change cabin without changing the flights. Cabin changes require the
user to pay for the difference between their current cabin and the new cabin class." The
benchmark's API never updates a reservation's ``cabin`` field on a change of cabin (only the
flights' prices show it), and keeps a flight at its old price whenever the call's ``cabin``
is that field. So after ``VAAOXJ`` (lei_rossi_3206, economy, one way, 1 passenger) was
upgraded to business with its flights unchanged ($363 charged; its ``cabin`` still says
``economy``), the customer's change back to economy — the same flights, ``cabin:
"economy"`` — kept both flights at their business prices: nothing changed and nothing was
refunded, yet the call executed and its verification passed ("the new flights"): the
journal records a change of cabin that did not happen. (U3 refused the same stale field
when the flights changed too — two cabins in one reservation — but not when none did.)

Now that call is refused, ``airline_cabin_unchanged``, naming the cabin the reservation
flies and the field's, so the agent tells the customer and hands over instead of
reporting a downgrade that never was; the upgrade, and a change to a cabin other than the
field's, still execute.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .airline_calls import airline_runtime, reservation, segments, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

UID, CARD = "lei_rossi_3206", "credit_card_1052991"
FLIGHTS = segments(("HAT287", "2024-05-24"), ("HAT235", "2024-05-24"))


def test_a_change_back_to_the_stale_cabin_is_refused(tmp_path: Path) -> None:
    def cabin(to: str) -> tuple[str, list[str]]:
        return submit(rt, "update_reservation_flights", UID, {
            "reservation_id": "VAAOXJ", "cabin": to, "flights": FLIGHTS, "payment_id": CARD})

    with airline_runtime(tmp_path) as rt:
        assert cabin("business") == ("executed", [])  # the upgrade: $363 charged
        upgraded = reservation(rt, "VAAOXJ")
        assert [f["price"] for f in json.loads(upgraded)["flights"]] == [298, 371]
        assert cabin("economy") == ("denied", ["airline_cabin_unchanged"])
        assert reservation(rt, "VAAOXJ") == upgraded
        assert cabin("basic_economy") == ("executed", [])  # another cabin: repriced
        assert [f["price"] for f in json.loads(reservation(rt, "VAAOXJ"))["flights"]] == [
            85, 77]
