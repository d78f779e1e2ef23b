"""``travel.airline``: a booking's verifier reads back the reservation its own call made.

Finding (twenty-fifth review, the airline's run graph): the verifier of
``airline.book_reservation`` looked for the reservation among the customer's, newest
first, and took the first with the call's flights, passengers and cabin. Two identical
bookings (a customer booking the same trip twice, two calls at once) both wrote before
either was verified, and both verifiers read back the newer one, ``HATHAU``: the run graph
said both actions made ``HATHAU`` and none made ``HATHAT`` — while each action's payment
(from the airline's change log, by the call's key) was for its own reservation.

Now the verifier reads the reservation the airline's change log records for the call's
key (written in the same transaction as the booking), and checks that one: each action
is linked to the reservation it made.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from .airline_calls import airline_runtime, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

UID = "mia_li_3668"
TRIP = {"user_id": UID, "origin": "JFK", "destination": "SEA", "flight_type": "one_way",
        "cabin": "economy",
        "flights": [{"flight_number": "HAT136", "date": "2024-05-20"},
                    {"flight_number": "HAT039", "date": "2024-05-20"}],
        "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
        "payment_methods": [{"payment_id": "credit_card_4421486", "amount": 255}],
        "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}
MADE_BY = """
PREFIX airline: <https://w3id.org/cradle/pack/airline#>
PREFIX cradle: <https://w3id.org/cradle#>
SELECT DISTINCT ?action ?made ?paidFor WHERE {
  ?action cradle:invokes <https://w3id.org/cradle/id/tool/airline.book_reservation> .
  ?r a airline:Reservation ; airline:changedBy ?action ; airline:reservationId ?made .
  ?p a airline:Payment ; airline:changedBy ?action ; airline:paidFor ?pr .
  ?pr airline:reservationId ?paidFor .
}
"""


def test_each_booking_is_linked_to_the_reservation_it_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with airline_runtime(tmp_path) as rt:
        [tools] = [m for name, m in list(sys.modules.items())
                   if name.startswith("cradle_pack_travel") and name.endswith(".tools")
                   and hasattr(m, "booked")]
        read_back = tools._booked
        both_written = threading.Barrier(2, timeout=60)
        first = threading.local()

        def after_both_wrote(*args: Any) -> Any:
            if not getattr(first, "done", False):
                first.done = True
                both_written.wait()
            return read_back(*args)

        monkeypatch.setattr(tools, "_booked", after_both_wrote)
        answers: list[tuple[str, list[str]]] = []
        racing = [threading.Thread(target=lambda: answers.append(
            submit(rt, "book_reservation", UID, TRIP))) for _ in range(2)]
        for t in racing:
            t.start()
        for t in racing:
            t.join(timeout=120)
        assert answers == [("executed", []), ("executed", [])]
        rt.sync_graph()
        store = rt.graph()
        assert store is not None
        rows = [(r["action"].value, r["made"].value, r["paidFor"].value)
                for r in store.query(MADE_BY)]
        # before: both actions `made` HATHAU, their payments for HATHAT and HATHAU
        assert sorted(made for _, made, _ in rows) == ["HATHAT", "HATHAU"], rows
        assert all(made == paid for _, made, paid in rows), rows
