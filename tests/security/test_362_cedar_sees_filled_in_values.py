"""Cedar is asked about the arguments the tool runs with, the ones its model fills in too.

Finding: gate 1 gave Cedar's ``context.arguments`` the keys the agent wrote, and compared
each with the value the tool's model makes of it (``test_102``). A value the model makes
that the agent did not write under its field's name was never seen by Cedar:

* a **default**: ``recursive: bool = True``; the agent leaves ``recursive`` out, Cedar reads
  ``context.arguments has recursive`` as false, the forbid written the usual way
  (``has recursive && recursive == true``) does not apply, and the tool runs the recursive
  delete it names;
* an **alias**: ``account_id: int = Field(alias="account")``; the agent writes
  ``"account": 7``, Cedar sees ``account`` and no ``account_id``, the forbid on
  ``account_id == 7`` does not apply, and the tool pays account 7;
* a value with no scalar form as written that the model reads as one (a ``before``
  validator taking ``[7]`` as ``7``): not compared, and absent from Cedar's context.

Permission conditions read the model's values already. Now Cedar's ``context.arguments``
also holds, for each of the model's fields the agent did not write as a scalar under its
name, the value the tool runs with (its JSON form, as ``test_115``), so the forbid meets
the call. What the agent wrote is given as before (compared with the model's by
``test_102``); a secret, a list or an object is still not given.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field, field_validator

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus
from tests.conftest import proposal
from tests.security.test_102_cedar_sees_tool_values import typed_tools

pytestmark = pytest.mark.usefixtures("journal_backend")

POLICY = """
@id("no-recursive-delete")
forbid(principal, action == Action::"test.delete", resource)
  when { context.arguments has recursive && context.arguments.recursive == true };

@id("account-7-is-frozen")
forbid(principal, action in [Action::"test.pay_to", Action::"test.pay_list"], resource)
  when { context.arguments has account_id && context.arguments.account_id == 7 };
"""


class Delete(BaseModel):
    path: str
    recursive: bool = True  # the tool's default: the dangerous one


class PayTo(BaseModel):
    account_id: int = Field(alias="account")
    amount: float


class PayList(BaseModel):
    account_id: int
    amount: float

    @field_validator("account_id", mode="before")
    @classmethod
    def _first(cls, value: Any) -> Any:  # a tool that takes `[7]` as 7
        return value[0] if isinstance(value, list) and value else value


@pytest.fixture
def ran(home: Path) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    with typed_tools(home, "frozen.cedar", POLICY, (
            ("test.delete", Delete), ("test.pay_to", PayTo),
            ("test.pay_list", PayList))) as served:
        yield served


def _submit(rt: Runtime, pid: str, tool: str, arguments: dict[str, Any]) -> Any:
    return rt.submit(proposal(pid, tool, arguments, agent="agent:tester", target="test:a"))


def _forbidden_by(out: Any, policy: str) -> None:
    assert out.status is OutcomeStatus.DENIED, (out.status, out.reasons)
    assert out.decision is not None
    assert policy in {r.policy_id for r in out.decision.policy_results}, out.reasons


def test_a_default_the_agent_left_out_meets_the_forbid(
        ran: tuple[Runtime, list[dict[str, Any]]]) -> None:
    rt, calls = ran
    # before: executed, the tool ran with recursive=True
    _forbidden_by(_submit(rt, "p-del", "test.delete", {"path": "/srv/data"}),
                  "no-recursive-delete")
    assert calls == []
    out = _submit(rt, "p-del-no", "test.delete", {"path": "/srv/data", "recursive": False})
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert calls == [{"tool": "test.delete", "path": "/srv/data", "recursive": False}]


def test_a_value_written_under_its_alias_meets_the_forbid(
        ran: tuple[Runtime, list[dict[str, Any]]]) -> None:
    rt, calls = ran
    # before: executed, account 7 was paid
    _forbidden_by(_submit(rt, "p-pay", "test.pay_to", {"account": 7, "amount": 5}),
                  "account-7-is-frozen")
    assert calls == []
    out = _submit(rt, "p-pay-8", "test.pay_to", {"account": 8, "amount": 5})
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert [c["account_id"] for c in calls] == [8]


def test_a_value_the_model_reads_out_of_a_list_meets_the_forbid(
        ran: tuple[Runtime, list[dict[str, Any]]]) -> None:
    rt, calls = ran
    # before: executed, account 7 was paid
    _forbidden_by(_submit(rt, "p-list", "test.pay_list", {"account_id": [7], "amount": 5}),
                  "account-7-is-frozen")
    assert calls == []
    out = _submit(rt, "p-list-8", "test.pay_list", {"account_id": [8], "amount": 5})
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert [c["account_id"] for c in calls] == [8]
