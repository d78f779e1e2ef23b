"""Cedar and the conditions read the values a tool runs with, whatever its model's dump.

Finding (twenty-second round's review, beside ``test_362``): gate 1 read the values the
tool's model holds through ``model.model_dump()`` — the values a tool runs with are its
model's attributes, and a model's dump is its author's to shape:

* ``serialize_by_alias=True`` (with ``populate_by_name``): the dump names a field by its
  alias. The agent wrote ``{"account_id": "7"}``: Cedar read ``account_id`` as the text
  ``"7"`` (not the number 7 of the forbid), and the value the tool runs with only under
  ``account``; the check that what the agent wrote is what the tool runs with
  (``test_102``) found no ``account_id`` in the dump and compared nothing: account 7 was
  paid. ``{"account": 7}`` was paid too (``test_362``'s alias, open again);
* ``Field(exclude=True)``: a field left out of the dump. ``recursive`` left out (the
  default ``True``), or written ``"true"``: Cedar never saw ``recursive == true``, and the
  tool ran the recursive delete.

Now gate 1 reads the model's fields by name, each as the tool reads it (its attribute),
for Cedar's context, the comparison with what the agent wrote, and the permission
conditions.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus
from tests.conftest import proposal
from tests.security.test_102_cedar_sees_tool_values import conditioned_config, typed_tools
from tests.security.test_362_cedar_sees_filled_in_values import POLICY

pytestmark = pytest.mark.usefixtures("journal_backend")


class PayTo(BaseModel):  # its dump (and JSON) names the account `account`
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)
    account_id: int = Field(alias="account")
    amount: float


class Delete(BaseModel):
    path: str
    recursive: bool = Field(True, exclude=True)  # run with, never dumped


@pytest.fixture
def ran(home: Path) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    with typed_tools(home, "frozen.cedar", POLICY,
                     (("test.pay_to", PayTo), ("test.delete", Delete))) as served:
        yield served


def _submit(rt: Runtime, pid: str, tool: str, arguments: dict[str, Any]) -> Any:
    return rt.submit(proposal(pid, tool, arguments, agent="agent:tester", target="test:a"))


@pytest.mark.parametrize(("tool", "arguments"), [
    ("test.pay_to", {"account_id": 7, "amount": 5}),
    ("test.pay_to", {"account": 7, "amount": 5}),
    ("test.delete", {"path": "/srv/data"}),
    ("test.delete", {"path": "/srv/data", "recursive": True}),
])
def test_the_forbid_meets_the_value_the_tool_runs_with(
        ran: tuple[Runtime, list[dict[str, Any]]], tool: str,
        arguments: dict[str, Any]) -> None:
    rt, calls = ran
    out = _submit(rt, "p", tool, arguments)
    # before: executed but for the first (account 7 paid; the recursive delete ran)
    assert out.status is OutcomeStatus.DENIED, (out.status, out.reasons)
    assert calls == []


@pytest.mark.parametrize(("tool", "arguments"), [
    ("test.pay_to", {"account_id": "7", "amount": 5}),
    ("test.delete", {"path": "/srv/data", "recursive": "true"}),
])
def test_a_value_written_as_another_type_is_refused(
        ran: tuple[Runtime, list[dict[str, Any]]], tool: str,
        arguments: dict[str, Any]) -> None:
    rt, calls = ran
    out = _submit(rt, "p", tool, arguments)
    # before: executed (compared with nothing: the dump had no such key)
    assert out.status is OutcomeStatus.DENIED, (out.status, out.reasons)
    assert out.decision is not None
    assert out.decision.reason_codes == ("invalid_arguments",), out.reasons
    assert calls == []


def test_other_values_run(ran: tuple[Runtime, list[dict[str, Any]]]) -> None:
    rt, calls = ran
    for i, (tool, arguments) in enumerate([
            ("test.pay_to", {"account_id": 8, "amount": 5}),
            ("test.pay_to", {"account": 8, "amount": 5}),
            ("test.delete", {"path": "/srv/data", "recursive": False})]):
        out = _submit(rt, f"p{i}", tool, arguments)
        assert out.status is OutcomeStatus.EXECUTED, (arguments, out.reasons)
    assert len(calls) == 3


@pytest.fixture
def conditioned(home: Path) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    with typed_tools(home, "all.cedar", '@id("all")\npermit(principal, action, resource);\n',
                     (("test.pay_to", PayTo), ("test.delete", Delete)),
                     config=conditioned_config({
                         "test.pay_to": {"arguments": {"account_id": {"ne": 7}}},
                         "test.delete": {"arguments": {"recursive": {"eq": False}}}})
                     ) as served:
        yield served


def test_a_condition_reads_the_field_by_name(
        conditioned: tuple[Runtime, list[dict[str, Any]]]) -> None:
    rt, calls = conditioned
    # before: denied, "the argument is absent" (the dump had `account`, no `recursive`)
    assert _submit(rt, "c1", "test.pay_to", {"account": 8, "amount": 5}
                   ).status is OutcomeStatus.EXECUTED
    assert _submit(rt, "c2", "test.delete", {"path": "/srv", "recursive": False}
                   ).status is OutcomeStatus.EXECUTED
    assert _submit(rt, "c3", "test.pay_to", {"account": 7, "amount": 5}
                   ).status is OutcomeStatus.DENIED
    assert _submit(rt, "c4", "test.delete", {"path": "/srv"}).status is OutcomeStatus.DENIED
    assert len(calls) == 2
