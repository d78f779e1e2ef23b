"""``travel.airline``: the flights a change replaced confirm a cancelled flight only when
the airline cancelled one of them, and only when the change was executed.

Finding (twenty-sixth review; the careful twin of ``test_581``): a reservation's replaced
flights now count for the cancelled-flight gesture. That must not let any changed
reservation claim $100 a passenger: ``anya_brown_2655`` (gold) has no flight cancelled
anywhere; the agent moves ``JEPRZB`` from ``HAT208`` of 2024-05-19 (available) to the
day after, and her complaint of a cancelled flight stays refused
(``airline_compensation_contradicted``). Nor may a change the API refused count:
``daiki_patel_1917``'s change off the cancelled ``HAT074`` paid with a card he does not
hold is the API's error, nothing is changed or recorded, and his reservation still shows
the cancelled flight (his gesture is confirmed by that, as before; the record adds no
second one — ``test_583``).

Now: what a reservation held is read from the airline's record of executed changes (the
row written in the change's transaction, beside its ``applied`` answer), and a segment
counts only if ``flights.json`` says the airline cancelled it.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from .airline_calls import YES, airline_runtime, segments, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

CANCELLED = [*YES, ["airline:compensationRequested", "cancelled_flight"]]
REFUSED = ("denied", ["airline_compensation_contradicted"])


def test_a_change_off_a_flight_not_cancelled_confirms_nothing(tmp_path: Path) -> None:
    uid = "anya_brown_2655"
    with airline_runtime(tmp_path) as rt:
        assert submit(rt, "send_certificate", uid, {"user_id": uid, "amount": 100},
                      CANCELLED) == REFUSED
        assert submit(rt, "update_reservation_flights", uid, {
            "reservation_id": "JEPRZB", "cabin": "economy",
            "flights": segments(("HAT208", "2024-05-20")),
            "payment_id": "gift_card_9782382"}) == ("executed", [])
        assert submit(rt, "send_certificate", uid, {"user_id": uid, "amount": 100},
                      CANCELLED) == REFUSED


def test_a_change_the_api_refused_records_nothing(tmp_path: Path) -> None:
    uid = "daiki_patel_1917"
    with airline_runtime(tmp_path) as rt:
        status, _ = submit(rt, "update_reservation_flights", uid, {
            "reservation_id": "0W60LB", "cabin": "business",
            "flights": segments(("HAT074", "2024-05-16")),
            "payment_id": "credit_card_0000000"})
        assert status != "executed"
        path = rt.home.root / "travel-airline" / "airline.sqlite"
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute("SELECT count(*) FROM replaced").fetchone() == (0,)
