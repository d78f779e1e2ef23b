"""A condition's dotted path that names two arguments does not hold.

Finding: a permission condition's path ``a.b`` was read as "argument ``a``, its key
``b``" only. A tool whose model keeps what it is sent — an upstream MCP tool's arguments
are checked by its JSON Schema and kept whole (``extra="allow"``) — may have an argument
whose *name* holds a dot (``"limits.amount"``: a schema's property names are any strings).
The operator's ``{"limits.amount": {"le": 100}}`` meant it; the agent sent
``{"limits.amount": 5000, "limits": {"amount": 1}}``: the condition read ``1`` and held,
and the tool ran with 5000. (The other way round, a tool reading ``limits.amount`` nested
was open to a literal key ``"limits.amount"`` the same way.)

Now a path that the arguments resolve in more than one way (a key with dots, keys nested)
fails the condition, saying so; a path resolved one way is read as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus
from tests.conftest import proposal
from tests.security.test_102_cedar_sees_tool_values import conditioned_config, typed_tools

pytestmark = pytest.mark.usefixtures("journal_backend")


class Kept(BaseModel):  # as an upstream MCP tool's arguments: whatever the schema allows
    model_config = ConfigDict(extra="allow")


@pytest.fixture
def ran(home: Path) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    with typed_tools(home, "all.cedar", '@id("all")\npermit(principal, action, resource);\n',
                     (("test.kept", Kept),), config=conditioned_config(
                         {"test.kept": {"arguments": {"limits.amount": {"le": 100}}}})
                     ) as served:
        yield served


def _submit(rt: Runtime, pid: str, arguments: dict[str, Any]) -> Any:
    return rt.submit(proposal(pid, "test.kept", arguments, agent="agent:tester",
                              target="test:a"))


@pytest.mark.parametrize("arguments", [
    {"limits.amount": 5000, "limits": {"amount": 1}},
    {"limits.amount": 1, "limits": {"amount": 5000}},
])
def test_a_path_named_two_ways_fails(ran: tuple[Runtime, list[dict[str, Any]]],
                                     arguments: dict[str, Any]) -> None:
    rt, calls = ran
    out = _submit(rt, "p-two", arguments)
    # before: executed, the condition read one of them
    assert out.status is OutcomeStatus.DENIED, (out.status, out.reasons)
    assert out.decision is not None
    assert out.decision.reason_codes == ("permission_condition_failed",)
    assert "names more than one argument" in " ".join(out.reasons)
    assert calls == []


@pytest.mark.parametrize("arguments", [{"limits.amount": 50}, {"limits": {"amount": 50}}])
def test_a_path_named_one_way_is_read(ran: tuple[Runtime, list[dict[str, Any]]],
                                      arguments: dict[str, Any]) -> None:
    rt, calls = ran
    out = _submit(rt, "p-one", arguments)
    assert out.status is OutcomeStatus.EXECUTED, (out.status, out.reasons)
    out = _submit(rt, "p-big", {k: 5000 if k.endswith("amount") else {"amount": 5000}
                                for k in arguments})
    assert out.status is OutcomeStatus.DENIED, (out.status, out.reasons)
    assert len(calls) == 1
