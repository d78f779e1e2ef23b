"""``travel.airline``: a booking never replaces a reservation that is already booked.

Finding (twenty-sixth review, the airline pack against ``wiki.md``): the benchmark's
``book_reservation`` names a new reservation ``HATHAT``, else ``HATHAU``, else ``HATHAV``
("assume each task makes at most 3 reservations") — and when all three exist it writes the
fourth booking over ``HATHAV``. The pack ports it as it is, and nothing stopped a fourth
booking on one database: after three bookings of ``mia_li_3668``, a booking of
``sophia_jackson_1792`` executed and was verified, and ``HATHAV`` — Mia's, paid $121 —
became Sophia's reservation. Mia's profile still lists ``HATHAV``; her reservation and its
payment are gone without a cancellation, no rule of "Cancel flight" asked, no refund
(``assert 'executed' != 'executed'``). A reservation is removed only by a cancellation the
policy allows; a booking "books" one.

Now the API answers the fourth booking as the pack answers a fourth certificate (the
benchmark's own id list is used up): ``Error: no reservation id left for a new booking``,
nothing written. The three bookings before it execute as they did; the fourth changes
nothing and ``HATHAV`` stays Mia's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .airline_calls import AGENT, YES, airline_runtime, reservation, segments, submit

pytestmark = pytest.mark.usefixtures("journal_backend")


def _booking(uid: str, card: str, first: str) -> dict[str, Any]:
    """HAT069 JFK→SEA on 2024-05-20, economy, one passenger: $121 (the benchmark's task 0)."""
    return {"user_id": uid, "origin": "JFK", "destination": "SEA", "flight_type": "one_way",
            "cabin": "economy", "flights": segments(("HAT069", "2024-05-20")),
            "passengers": [{"first_name": first, "last_name": "Li", "dob": "1990-04-05"}],
            "payment_methods": [{"payment_id": card, "amount": 121}],
            "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}


def _proposal(uid: str, arguments: dict[str, Any]) -> dict[str, Any]:
    who = f"customer:{uid}"
    return {"id": f"p-fourth-{uid}", "task_id": f"t-fourth-{uid}", "agent_id": AGENT,
            "on_behalf_of": who, "facts": [{"subject": who, "predicate": p, "object": v,
                                            "source": who} for p, v in YES],
            "action": {"action_type": "airline.book_reservation", "target": who,
                       "arguments": arguments}}


def test_a_fourth_booking_does_not_replace_the_third(tmp_path: Path) -> None:
    with airline_runtime(tmp_path) as rt:
        for n in range(3):
            assert submit(rt, "book_reservation", "mia_li_3668", _booking(
                "mia_li_3668", "credit_card_4421486", f"Mia{n}")) == ("executed", [])
        third = reservation(rt, "HATHAV")
        assert json.loads(third)["user_id"] == "mia_li_3668"
        fourth = rt.submit(_proposal("sophia_jackson_1792", _booking(
            "sophia_jackson_1792", "credit_card_8938426", "Sophia")))
        assert str(fourth.status) != "executed"
        assert reservation(rt, "HATHAV") == third
        # the API's own answer (no policy decision: the call is the benchmark's to refuse)
        assert str(fourth.status) == "verification_failed"
        assert fourth.observation is not None
        assert fourth.observation.output["output"] == (
            "Error: no reservation id left for a new booking")
