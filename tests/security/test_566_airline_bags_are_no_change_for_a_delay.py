"""``travel.airline``: a bag bought is not a change of flights that confirms a delay.

Finding (twenty-sixth review, the airline pack against ``wiki.md``): "If the user is
silver/gold member … and complains about delayed flights in a reservation and wants to
change or cancel the reservation, the agent can offer a certificate as a gesture after
confirming the facts and changing or cancelling the reservation, with the amount being $50
times the number of passengers." When no reservation of the customer shows a flight
delayed, or one that left late, the pack still confirms the delay on a reservation "already
changed for the delay" (S2): a segment priced at today's price and, after the booking's
payment, "the difference [the API] charged or refunded". Any later payment was taken for
that difference — a bag bought too. ``sophia_jackson_1792`` (gold) has no flight delayed
and none late, and her complaint of a delay is refused (``airline_compensation_contradicted``);
``MH6BI5`` (two passengers) was booked at a price one of its flights still has today. She
adds five bags (one non-free, $50: the allowance is right, and it executes) — and the
same complaint then executed: a $100 certificate for a delay nothing in the database shows
(``assert ('executed', []) == ('denied', ['airline_compensation_contradicted'])``).

Now a later payment counts as a change's difference only when bags cannot explain it: a
change of bags charges $50 per non-free bag added, never refunds, and never more in all
than the reservation's non-free bags. The same complaint stays refused after the bags;
after a change of flights the complaint is confirmed as before (its difference is no
multiple of $50 here: $656 for basic economy to economy).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime

from .airline_calls import YES, airline_runtime, segments, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

UID, CARD = "sophia_jackson_1792", "credit_card_8938426"
DELAY = [*YES, ["airline:compensationRequested", "delayed_flight"]]
REFUSED = ("denied", ["airline_compensation_contradicted"])


def _certificate(rt: Runtime) -> tuple[str, list[str]]:
    return submit(rt, "send_certificate", UID, {"user_id": UID, "amount": 100}, DELAY)


def test_a_bag_bought_does_not_confirm_a_delay(tmp_path: Path) -> None:
    with airline_runtime(tmp_path) as rt:
        assert _certificate(rt) == REFUSED
        # gold, basic economy, two passengers: four bags free, the fifth $50
        assert submit(rt, "update_reservation_baggages", UID, {
            "reservation_id": "MH6BI5", "total_baggages": 5, "nonfree_baggages": 1,
            "payment_id": CARD}) == ("executed", [])
        assert _certificate(rt) == REFUSED


def test_a_change_of_cabin_still_confirms_it(tmp_path: Path) -> None:
    """The careful twin: the reservation changed through the API (its cabin, the flights
    kept — what a customer whose flight is late may ask) is one "changed for the delay",
    as before: the $100 gesture is issued once."""
    with airline_runtime(tmp_path) as rt:
        flights = segments(("HAT015", "2024-05-22"), ("HAT043", "2024-05-22"),
                           ("HAT287", "2024-05-25"), ("HAT277", "2024-05-25"))
        assert submit(rt, "update_reservation_flights", UID, {
            "reservation_id": "MH6BI5", "cabin": "economy", "flights": flights,
            "payment_id": CARD}) == ("executed", [])
        assert _certificate(rt) == ("executed", [])
