"""Cedar decides on the argument values the tool will run with, not on how the agent spelled
them.

Finding: gate 1 gave Cedar's ``context.arguments`` the proposal's raw values, while the tool
receives them through its model, which coerces (pydantic's lax mode: ``"true"`` and ``1``
are ``True`` for a ``bool``, ``"7"`` is ``7`` for an ``int``). ``test_35`` relied on a
coerced value being one Cedar cannot *order* (``"5000" > 1000`` is a type error, the
policy fails to evaluate: denied). But Cedar's ``==``, ``!=`` and ``.contains`` compare
values of different types without an error — they are simply not equal. A forbid written
the obvious way, ``context.arguments.recursive == true`` or ``context.arguments.account_id
== 7``, did not apply to ``"recursive": "true"`` (or ``1``) or ``"account_id": "7"``: the
proposal was allowed and the tool ran the very call the forbid names (a recursive delete,
a payment to account 7). Permission conditions already read the arguments as the tool
receives them (``Permission.conditions``); Cedar did not.

Now gate 1 refuses an argument whose scalar, as Cedar reads it, is not the one the tool's
model makes of it (``invalid_arguments``, "write it as its type"), before any policy is
asked: what the policies decide on is what runs. A whole float and its integer are one
value (``test_35``); an argument with no scalar form on either side (a list, an object) is
not compared — a date, a URL or a UUID the model parses is, in its JSON form, since
``test_115``. A forbid on ``==`` holds however the value is
spelled: the typed value meets the forbid, every other spelling is refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cradle_kg import Runtime, ToolSpec
from cradle_kg.config import RuntimeConfig
from cradle_kg.records import IdempotencyClass, OutcomeStatus, Permission, SideEffectClass
from tests.conftest import EchoOut, make_config, proposal, register_test_tools

pytestmark = pytest.mark.usefixtures("journal_backend")

POLICY = """
@id("no-recursive-delete")
forbid(principal, action == Action::"test.delete", resource)
  when { context.arguments has recursive && context.arguments.recursive == true };

@id("account-7-is-frozen")
forbid(principal, action == Action::"test.pay_to", resource)
  when { context.arguments has account_id && context.arguments.account_id == 7 };
"""


class Delete(BaseModel):
    path: str
    recursive: bool = False


class PayTo(BaseModel):
    account_id: int
    amount: float


@contextmanager
def typed_tools(home: Path, policy_file: str, policy: str,
                tools: Sequence[tuple[str, type[BaseModel]]],
                config: RuntimeConfig | None = None,
                ) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    """A runtime with ``policy`` and ``tools`` (each an id and its input model) that record
    the arguments they run with, in their JSON form (``test_115`` too); ``config`` is
    :func:`make_config`'s unless given (``test_363``)."""
    (home / "policies" / policy_file).write_text(policy)
    calls: list[dict[str, Any]] = []
    with Runtime(home, config=config or make_config(), graph_sync=False) as rt:
        register_test_tools(rt)
        for tool, model in tools:
            rt.register_tool(ToolSpec(
                id=tool, version="1", input_model=model, output_model=EchoOut,
                side_effect_class=SideEffectClass.REVERSIBLE,
                idempotency=IdempotencyClass.NATURAL, blast_radius=("test:*",),
                target_from="test:*", verifier="test.ok"),
                lambda call, tool=tool: calls.append(  # type: ignore[misc]
                    {"tool": tool, **call.arguments.model_dump(mode="json")}) or EchoOut())
        yield rt, calls


def conditioned_config(conditions: Mapping[str, dict[str, Any]]) -> RuntimeConfig:
    """:func:`make_config` with ``agent:tester`` permitted each tool of ``conditions`` (on
    ``test:*``) under its conditions, and nothing else (``test_363``, ``test_364``)."""
    base = make_config()
    perms = (*(p for p in base.permissions if p.subject != "agent:tester"),
             *(Permission(subject="agent:tester", action_type=tool, resource_selector="test:*",
                          conditions=given) for tool, given in conditions.items()))
    return base.model_copy(update={"permissions": perms})


@pytest.fixture
def ran(home: Path) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    with typed_tools(home, "frozen.cedar", POLICY,
                     (("test.delete", Delete), ("test.pay_to", PayTo))) as served:
        yield served


def _submit(rt: Runtime, pid: str, tool: str, arguments: dict[str, Any]) -> Any:
    return rt.submit(proposal(pid, tool, arguments, agent="agent:tester", target="test:a"))


def _denied_why(out: Any) -> tuple[str, ...]:
    assert out.status is OutcomeStatus.DENIED, (out.status, out.reasons)
    assert out.decision is not None
    return out.decision.reason_codes


@pytest.mark.parametrize("recursive", [True, "true", 1, "1", "yes", "on"])
def test_a_forbid_on_a_boolean_holds_however_it_is_written(
        ran: tuple[Runtime, list[dict[str, Any]]], recursive: object) -> None:
    rt, calls = ran
    out = _submit(rt, "p-del", "test.delete", {"path": "/srv/data", "recursive": recursive})
    # before: "true", 1, "1", "yes", "on" executed a recursive delete
    codes = _denied_why(out)
    assert calls == []
    if recursive is True:  # the policy's own refusal
        assert out.decision is not None
        assert "no-recursive-delete" in {r.policy_id for r in out.decision.policy_results}
    else:  # not the value the tool runs with: refused before any policy is asked
        assert codes == ("invalid_arguments",), codes
        assert "write it as its type" in out.reasons[0]


@pytest.mark.parametrize("account", [7, "7", 7.0, "07", " 7"])
def test_a_forbid_on_an_integer_holds_however_it_is_written(
        ran: tuple[Runtime, list[dict[str, Any]]], account: object) -> None:
    rt, calls = ran
    out = _submit(rt, "p-pay", "test.pay_to", {"account_id": account, "amount": 5})
    # before: "7", "07" and " 7" paid account 7
    codes = _denied_why(out)
    assert calls == []
    assert codes == (("forbidden_by_policy",) if isinstance(account, int | float)
                     else ("invalid_arguments",)), (account, codes)


def test_values_written_as_their_type_run(ran: tuple[Runtime, list[dict[str, Any]]]) -> None:
    rt, calls = ran
    for pid, tool, arguments in (
            ("p-1", "test.delete", {"path": "/tmp/x"}),
            ("p-2", "test.delete", {"path": "/tmp/y", "recursive": False}),
            ("p-3", "test.pay_to", {"account_id": 8, "amount": 5}),
            ("p-4", "test.pay_to", {"account_id": 9.0, "amount": 5.5}),
            ("p-5", "test.pay_to", {"account_id": 10, "amount": 5})):  # int for a float
        out = _submit(rt, pid, tool, arguments)
        assert out.status is OutcomeStatus.EXECUTED, (pid, out.reasons)
    assert [c.get("recursive", c.get("account_id")) for c in calls] == [False, False, 8, 9, 10]
    # a spelling the tool would coerce is refused even where no policy looks at it: what a
    # policy is asked about is what runs
    out = _submit(rt, "p-6", "test.pay_to", {"account_id": "8", "amount": 5})
    assert _denied_why(out) == ("invalid_arguments",)
    assert len(calls) == 5
