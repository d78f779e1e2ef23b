"""``travel.airline``: the run graph says the cabin a reservation flies, write by write.

Finding (twenty-fifth review; left open by the twenty-fourth, ``test_456``): the pack's
projection hook gave each write's reservation the ``airline:cabin`` of the reservation's
``cabin`` field as the verifier read it back — and the benchmark's API never updates that
field on a change of cabin (``update_reservation_flights`` reprices the flights in the new
cabin and leaves the field). After ``VAAOXJ`` (economy) was upgraded to business — $363
charged, both flights repriced — and then moved to basic economy, the graph said of both
writes that the reservation flew ``airline:Economy``: a provenance query ("which cabin did
this action leave the reservation in?") or a shape over the graph read a cabin the
reservation no longer held. Projecting the cabin on the reservation itself could not say
it either: one run's writes would give it two cabins, which the pack's shape refuses at
commit.

Now the verifier reads the cabin flown from the flights' prices (``rules.effective_cabin``,
the reading the rules decide on) into its evidence, and the hook projects it on a state of
the reservation per write (``airline:ReservationState``: ``airline:stateOf`` the
reservation, ``airline:cabin``, ``airline:changedBy`` the action): the upgrade's state
says ``Business``, the downgrade's ``BasicEconomy``, both writes in one run commit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .airline_calls import airline_runtime, segments, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

UID, CARD = "lei_rossi_3206", "credit_card_1052991"
FLIGHTS = segments(("HAT287", "2024-05-24"), ("HAT235", "2024-05-24"))
CABIN_BY_WRITE = """
PREFIX airline: <https://w3id.org/cradle/pack/airline#>
PREFIX cradle: <https://w3id.org/cradle#>
SELECT ?at ?cabin WHERE {
  ?r airline:reservationId "VAAOXJ" .
  ?x airline:stateOf? ?r ; airline:changedBy ?action ; airline:cabin ?cabin .
  ?t cradle:transitionOf ?action ; cradle:committedAt ?at .
} ORDER BY ?at ?cabin
"""


def test_each_write_says_the_cabin_the_reservation_flies(tmp_path: Path) -> None:
    def cabin(to: str) -> tuple[str, list[str]]:
        return submit(rt, "update_reservation_flights", UID, {
            "reservation_id": "VAAOXJ", "cabin": to, "flights": FLIGHTS,
            "payment_id": CARD}, run_id="run:h9-cabin")

    with airline_runtime(tmp_path) as rt:
        # one run: the shape's "one cabin" holds per state, so both writes commit
        assert cabin("business") == ("executed", [])
        assert cabin("basic_economy") == ("executed", [])
        rt.sync_graph()
        store = rt.graph()
        assert store is not None
        said = [row["cabin"].value.rsplit("#", 1)[1] for row in store.query(CABIN_BY_WRITE)]
        assert said == ["Business", "BasicEconomy"]
