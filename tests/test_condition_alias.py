"""A permission condition written on a field's alias says which field it means.

Conditions read the arguments as the tool runs with them, by field name. A condition an
operator wrote on the name the agent writes (``to``, the alias of ``recipients``) reads no
argument: it fails — closed, the call is denied — and before, the reason said only "the
argument is absent", which an operator reading an argument named ``to`` in the proposal
could not understand. Now the reason names the field the condition means.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus
from cradle_kg.tools import fields_by_alias
from tests.conftest import proposal
from tests.security.test_102_cedar_sees_tool_values import conditioned_config, typed_tools

ALLOW = '@id("all")\npermit(principal, action, resource);\n'


class Mail(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    recipients: list[str] = Field(alias="to")
    account: str = Field("acct-1", validation_alias=AliasChoices("account", "iban"))


def _mailer(home: Path, condition: dict[str, Any]
            ) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    with typed_tools(home, "all.cedar", ALLOW, (("test.mail", Mail),),
                     config=conditioned_config({"test.mail": {"arguments": condition}})
                     ) as served:
        yield served


def _send(rt: Runtime, pid: str, arguments: dict[str, Any]) -> Any:
    return rt.submit(proposal(pid, "test.mail", arguments, agent="agent:tester",
                              target="test:a"))


def test_the_other_names_of_a_models_fields() -> None:
    assert dict(fields_by_alias(Mail)) == {"to": "recipients", "iban": "account"}


@pytest.mark.parametrize(("written", "field"), [("to", "recipients"), ("iban", "account")])
def test_a_condition_on_an_alias_is_denied_naming_its_field(home: Path, written: str,
                                                            field: str) -> None:
    condition = {written: {"ne": "nobody"}}
    for rt, calls in _mailer(home, condition):
        out = _send(rt, "p-1", {"to": ["alice@corp.example"], "iban": "acct-2"})
        assert out.status is OutcomeStatus.DENIED, (out.status, out.reasons)
        assert calls == []
        said = " ".join(out.reasons)
        assert f"`arguments.{written} ne nobody`: the argument is absent" in said, said
        assert f"the tool's field `{field}`" in said, said


def test_a_condition_on_the_field_holds(home: Path) -> None:
    for rt, calls in _mailer(home, {"account": {"ne": "acct-9"}}):
        out = _send(rt, "p-1", {"to": ["alice@corp.example"], "iban": "acct-2"})
        assert out.status is OutcomeStatus.EXECUTED, (out.status, out.reasons)
        assert len(calls) == 1
