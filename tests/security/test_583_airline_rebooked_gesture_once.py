"""``travel.airline``: the gesture for a cancelled flight a change replaced is offered
once per reservation.

Finding (twenty-sixth review; with ``test_581``): once a reservation's replaced flights
confirm a cancelled flight, the gesture counted against it must be the one gesture of that
reservation, as for a reservation still showing the flight. ``daiki_patel_1917`` is
rebooked off the cancelled ``HAT074`` of 2024-05-14; a first $100 certificate executes
(refused before the fix: ``assert ('denied', ['airline_compensation_contradicted']) ==
('executed', [])``), a second one for the same complaint is refused
(``airline_compensation_repeated``), and so is one asked before the change and again
after it.

Now: a reservation concerned through its replaced flights has one amount among the
customer's, used up by a certificate the API issued for it (the profile's, or spent on a
booking), as every other reservation concerned.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime

from .airline_calls import YES, airline_runtime, segments, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

UID, CARD, RID = "daiki_patel_1917", "credit_card_4327297", "0W60LB"
CANCELLED = [*YES, ["airline:compensationRequested", "cancelled_flight"]]
CHANGE = {"reservation_id": RID, "cabin": "business",
          "flights": segments(("HAT074", "2024-05-16")), "payment_id": CARD}


def _certificate(rt: Runtime) -> tuple[str, list[str]]:
    return submit(rt, "send_certificate", UID, {"user_id": UID, "amount": 100},
                  CANCELLED)


def test_a_second_certificate_after_the_rebooking_is_refused(tmp_path: Path) -> None:
    with airline_runtime(tmp_path) as rt:
        assert submit(rt, "update_reservation_flights", UID, CHANGE) == ("executed", [])
        assert _certificate(rt) == ("executed", [])
        assert _certificate(rt) == ("denied", ["airline_compensation_repeated"])


def test_a_certificate_before_the_rebooking_is_the_one_gesture(tmp_path: Path) -> None:
    with airline_runtime(tmp_path) as rt:
        assert _certificate(rt) == ("executed", [])
        assert submit(rt, "update_reservation_flights", UID, CHANGE) == ("executed", [])
        assert _certificate(rt) == ("denied", ["airline_compensation_repeated"])
