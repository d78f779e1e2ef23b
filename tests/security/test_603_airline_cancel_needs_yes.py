"""``travel.airline``: a cancellation needs the customer's explicit yes.

Finding (twenty-seventh review, the airline pack against ``wiki.md``): "Before taking any
actions that update the booking database (booking, modifying flights, editing baggage,
upgrading cabin class, or updating passenger information), you must list the action
details and obtain explicit user confirmation (yes) to proceed." Cancelling a reservation
updates the booking database (its status becomes ``cancelled`` and every payment is
refunded) — the sentence's rule is "any actions that update the booking database", the
parenthesis lists examples of them. The pack read the parenthesis as the whole rule and
required ``airline:confirmed`` only on the five listed writes: ``chen_jackson_3290``'s
business reservation ``4WQ150`` (which "can always be cancelled") was cancelled and
refunded on the reason alone, the customer never having said yes to it
(``assert ('executed', []) == ('needs_clarification', ['airline_fact_missing'])``).

Now a cancellation with no ``airline:confirmed`` is ``needs_clarification`` naming the fact
(the host asks the customer), as a booking is; a ``no`` is still denied; with the customer's yes it
executes as before (the careful twin). The agent's own "yes" counts for nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .airline_calls import YES, airline_runtime, reservation, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

UID, RID = "chen_jackson_3290", "4WQ150"
REASON = ["airline:cancellationReason", "change_of_plan"]


def test_a_cancellation_without_the_customers_yes_waits_for_it(tmp_path: Path) -> None:
    with airline_runtime(tmp_path) as rt:
        assert submit(rt, "cancel_reservation", UID, {"reservation_id": RID},
                      [REASON]) == ("needs_clarification", ["airline_fact_missing"])
        assert '"status": "cancelled"' not in reservation(rt, RID)
        assert submit(rt, "cancel_reservation", UID, {"reservation_id": RID},
                      [REASON, ["airline:confirmed", "no"]]) == (
            "denied", ["airline_not_confirmed"])
        assert '"status": "cancelled"' not in reservation(rt, RID)


def test_with_the_customers_yes_it_is_cancelled(tmp_path: Path) -> None:
    with airline_runtime(tmp_path) as rt:
        assert submit(rt, "cancel_reservation", UID, {"reservation_id": RID},
                      [REASON, *YES]) == ("executed", [])
        assert '"status": "cancelled"' in reservation(rt, RID)
