"""``travel.airline``: a certificate is issued after the customer's explicit yes.

Finding (twenty-seventh review, the airline pack against ``wiki.md``): "Before taking any
actions that update the booking database (…), you must list the action details and obtain
explicit user confirmation (yes) to proceed." ``send_certificate`` writes the database: it
adds a travel certificate to the customer's profile, a payment method they can then book
with. The pack required ``airline:confirmed`` only on the five writes the sentence's
parenthesis lists, so ``isabella_anderson_9682`` (silver, a cancelled flight, one
passenger) who asked for compensation was sent the $100 certificate without the agent
listing it and the customer saying yes
(``assert ('executed', []) == ('needs_clarification', ['airline_fact_missing'])``).

Now a certificate with no ``airline:confirmed`` is ``needs_clarification`` naming the fact, a ``no``
is denied, and with the customer's yes it executes as before (the careful twin). The
grounds, eligibility and amount are checked first, as for the other writes: an amount the
policy refuses is refused whatever the customer said.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime

from .airline_calls import YES, airline_runtime, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

UID = "isabella_anderson_9682"
ASKED = ["airline:compensationRequested", "cancelled_flight"]


def _certificate(rt: Runtime, amount: int, facts: list[list[str]]) -> tuple[str, list[str]]:
    return submit(rt, "send_certificate", UID, {"user_id": UID, "amount": amount}, facts)


def test_a_certificate_without_the_customers_yes_waits_for_it(tmp_path: Path) -> None:
    with airline_runtime(tmp_path) as rt:
        assert _certificate(rt, 100, [ASKED]) == (
            "needs_clarification", ["airline_fact_missing"])
        assert _certificate(rt, 100, [ASKED, ["airline:confirmed", "no"]]) == (
            "denied", ["airline_not_confirmed"])
        # the policy's checks come first: a wrong amount is refused, yes or not
        assert _certificate(rt, 200, [ASKED]) == ("denied", ["airline_compensation_amount"])


def test_with_the_customers_yes_it_is_issued(tmp_path: Path) -> None:
    with airline_runtime(tmp_path) as rt:
        assert _certificate(rt, 100, [ASKED, *YES]) == ("executed", [])
        assert _certificate(rt, 100, [ASKED, *YES]) == (
            "denied", ["airline_compensation_repeated"])
