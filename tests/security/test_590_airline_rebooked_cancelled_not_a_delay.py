"""``travel.airline``: a reservation rebooked off a *cancelled* flight does not confirm a
*delayed*-flight complaint.

Finding (twenty-sixth review, the round's late changes, left open there): the delay
gesture ("complains about delayed flights in a reservation and wants to change or cancel
the reservation … after confirming the facts and changing or cancelling the reservation,
$50 times the number of passengers") was confirmed, when no reservation shows a delayed
flight now, on any reservation whose flights the API changed today — the change is read as
the one made for the delay. ``daiki_patel_1917`` (gold), rebooked today off ``0W60LB``'s
``HAT074`` of 2024-05-14, which the airline *cancelled*, then said his flight was delayed:
the $50 certificate for that reservation executed
(``assert ('executed', []) == ('denied', […])``) — on top of the $100 his cancelled flight
is owed. (His ``W9ES2R``, two passengers, flew late on 2024-05-12: a delay complaint is
confirmed there, at $100, not at $50 for ``0W60LB``.)

Now the delay is confirmed on the segments a reservation holds *and* those a change this
home executed replaced (the airline's ``replaced`` record, ``test_581``): a replaced
segment that was delayed (or left late) confirms it; a reservation whose recorded change
replaced no delayed segment is not "changed for the delay". A change the home has no
record of (the benchmark's data, a change made elsewhere) keeps the earlier reading.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .airline_calls import YES, airline_runtime, segments, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

UID, CARD, RID = "daiki_patel_1917", "credit_card_4327297", "0W60LB"
DELAYED = [*YES, ["airline:compensationRequested", "delayed_flight"]]
CANCELLED = [*YES, ["airline:compensationRequested", "cancelled_flight"]]


def test_a_change_off_a_cancelled_flight_is_no_delay(tmp_path: Path) -> None:
    with airline_runtime(tmp_path) as rt:
        assert submit(rt, "update_reservation_flights", UID, {
            "reservation_id": RID, "cabin": "business",
            "flights": segments(("HAT074", "2024-05-16")),
            "payment_id": CARD}) == ("executed", [])
        # 0W60LB's change confirms no delay: only W9ES2R (two passengers, late) is concerned
        assert submit(rt, "send_certificate", UID, {"user_id": UID, "amount": 50},
                      DELAYED) == ("denied", ["airline_compensation_amount"])
        # the gesture the facts confirm is still there, once
        assert submit(rt, "send_certificate", UID, {"user_id": UID, "amount": 100},
                      CANCELLED) == ("executed", [])
