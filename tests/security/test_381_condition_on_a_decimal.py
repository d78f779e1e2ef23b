"""A permission condition on a ``Decimal`` argument compares the number written.

Finding (twenty-second round's review, beside ``test_363``): a condition reads the value the
tool's model holds, and a model that parses an amount as a ``Decimal`` holds
``Decimal("0.3")`` for ``0.3``; the condition's operand is the ``float`` its JSON number
reads as, ``0.299999999999999988897769753748…``. Python compares the two exactly: they
differ. So ``{"amount": {"not_in": [0.3]}}`` and ``{"ne": 0.3}`` held for an amount of
``0.3`` (the call ran), ``{"lt": 0.1}`` held for ``0.1``, and ``{"in": [0.3]}`` and
``{"ge": 0.1}`` never held for the value they name (denied).

Now a ``Decimal`` is compared with an operand as the number written (``0.3`` is
``Decimal("0.3")``): the value a person reads in the configuration.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus
from tests.conftest import proposal
from tests.security.test_102_cedar_sees_tool_values import conditioned_config, typed_tools

pytestmark = pytest.mark.usefixtures("journal_backend")

ALLOW_ALL = '@id("all")\npermit(principal, action, resource);\n'


class Pay(BaseModel):
    amount: Decimal


CONDITIONS: dict[str, dict[str, Any]] = {
    "test.pay_not_in": {"arguments": {"amount": {"not_in": [0.3]}}},
    "test.pay_ne": {"arguments": {"amount": {"ne": 0.3}}},
    "test.pay_lt": {"arguments": {"amount": {"lt": 0.1}}},
    "test.pay_in": {"arguments": {"amount": {"in": [0.3]}}},
    "test.pay_ge": {"arguments": {"amount": {"ge": 0.1}}},
}


@pytest.fixture
def ran(home: Path) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    with typed_tools(home, "all.cedar", ALLOW_ALL,
                     tuple((tool, Pay) for tool in CONDITIONS),
                     config=conditioned_config(CONDITIONS)) as served:
        yield served


def _submit(rt: Runtime, tool: str, amount: object) -> Any:
    return rt.submit(proposal("p", tool, {"amount": amount}, agent="agent:tester",
                              target="test:a"))


@pytest.mark.parametrize(("tool", "amount"), [
    ("test.pay_not_in", 0.3), ("test.pay_not_in", "0.3"), ("test.pay_not_in", "0.30"),
    ("test.pay_ne", 0.3), ("test.pay_lt", 0.1), ("test.pay_lt", "0.1"),
    ("test.pay_in", 0.31), ("test.pay_ge", "0.09"),
])
def test_a_value_the_condition_excludes_does_not_run(
        ran: tuple[Runtime, list[dict[str, Any]]], tool: str, amount: object) -> None:
    rt, calls = ran
    out = _submit(rt, tool, amount)
    # before: executed for the first six (the Decimal is not the float, exactly)
    assert out.status is OutcomeStatus.DENIED, (out.status, out.reasons)
    assert out.decision is not None
    assert out.decision.reason_codes == ("permission_condition_failed",)
    assert calls == []


@pytest.mark.parametrize(("tool", "amount"), [
    ("test.pay_in", 0.3), ("test.pay_in", "0.30"), ("test.pay_ge", 0.1),
    ("test.pay_lt", "0.09"), ("test.pay_not_in", 0.31), ("test.pay_ne", 1),
])
def test_a_value_the_condition_allows_runs(
        ran: tuple[Runtime, list[dict[str, Any]]], tool: str, amount: object) -> None:
    rt, calls = ran
    out = _submit(rt, tool, amount)
    # before: the first three denied (`in` and `ge` did not hold for the value they name)
    assert out.status is OutcomeStatus.EXECUTED, (out.status, out.reasons)
    assert [Decimal(c["amount"]) for c in calls] == [Decimal(str(amount))]
