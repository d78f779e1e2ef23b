"""``travel.airline``: a customer rebooked off a flight the airline cancelled, then asking
for the cancelled-flight gesture, is refused.

Finding (twenty-sixth review, the airline pack against ``wiki.md``): "If the user is
silver/gold member or has travel insurance or flies business, and complains about
cancelled flights in a reservation, the agent can offer a certificate as a gesture after
confirming the facts, with the amount being $100 times the number of passengers." The
pack confirmed the facts on the reservations as they are before the certificate: a
reservation the agent had just moved off the cancelled flight no longer shows it.
``daiki_patel_1917`` (gold) booked ``0W60LB`` (business, one passenger) on ``HAT074`` of
2024-05-14, which the airline cancelled. The agent rebooks him on ``HAT074`` of
2024-05-16 (executed and verified); he then complains and asks for the gesture: refused,
``airline_compensation_contradicted``
(``assert ('denied', ['airline_compensation_contradicted']) == ('executed', [])``) — an
over-refusal the written policy does not make.

Now the flights a reservation held before a change of flights this home executed are the
airline's own record (``replaced``, written in the change's own transaction, read by
reservation): a segment the airline cancelled (``flights.json``) that such a change
replaced is the customer's cancelled flight, and the $100 certificate executes, once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .airline_calls import YES, airline_runtime, segments, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

UID, CARD, RID = "daiki_patel_1917", "credit_card_4327297", "0W60LB"
CANCELLED = [*YES, ["airline:compensationRequested", "cancelled_flight"]]


def test_rebooked_off_a_cancelled_flight_the_gesture_executes(tmp_path: Path) -> None:
    with airline_runtime(tmp_path) as rt:
        assert submit(rt, "update_reservation_flights", UID, {
            "reservation_id": RID, "cabin": "business",
            "flights": segments(("HAT074", "2024-05-16")),
            "payment_id": CARD}) == ("executed", [])
        assert submit(rt, "send_certificate", UID, {"user_id": UID, "amount": 100},
                      CANCELLED) == ("executed", [])
        # the journal holds what the record says: the verifier read the segment back
        replaced = [e.payload["evidence"].get("replaced") for e in rt.journal.events()
                    if e.kind == "verification.recorded"
                    and "replaced" in (e.payload.get("evidence") or {})]
        assert replaced == [[{"reservation_id": RID, "flight_number": "HAT074",
                              "date": "2024-05-14"}]]


def test_the_amount_is_still_per_passenger(tmp_path: Path) -> None:
    """The replaced flight makes the reservation the one concerned, not any amount: $100
    times its one passenger."""
    with airline_runtime(tmp_path) as rt:
        assert submit(rt, "update_reservation_flights", UID, {
            "reservation_id": RID, "cabin": "business",
            "flights": segments(("HAT074", "2024-05-16")),
            "payment_id": CARD}) == ("executed", [])
        assert submit(rt, "send_certificate", UID, {"user_id": UID, "amount": 200},
                      CANCELLED) == ("denied", ["airline_compensation_amount"])
