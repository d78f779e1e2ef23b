"""A policy engine answers a request it decided before as it decided it
(:meth:`cradle_kg.policy.PolicyEngine.evaluate`): Cedar's answer is a function of the
policy set, the entities and the request. Every part of the request and of the entities
is part of the key (a changed argument, target, principal or entity is decided anew), a
decision that erred is never kept, and a runtime that parsed a proposal does not check it
a second time in ``submit`` — only the very object it returned."""

from __future__ import annotations

from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import ProposalError
from cradle_kg.policy import PolicyEngine
from cradle_kg.policy.cedar import PolicySource
from cradle_kg.records import OutcomeStatus, Proposal

from .conftest import proposal

TEXT = ('@id("small") permit(principal, action, resource) when '
        '{ context.arguments.amount < 100 && principal.role == "ops" };\n'
        '@id("no-b") @reason("b is closed") forbid(principal, action, resource) when '
        '{ resource == Resource::"ledger:b" };\n')
#: a policy that errs on a string ``tool`` (a type error): fail closed
ERRING = '@id("typed") permit(principal, action, resource) when { context.tool > 1 };\n'


def _ask(amount: Any = 5, target: str = "ledger:a", role: str = "ops",
         agent: str = "agent:ops") -> dict[str, Any]:
    return {"principal": ("Agent", agent), "action": ("Action", "demo.ledger.credit"),
            "resource": ("Resource", target),
            "context": {"tool": "demo.ledger.credit", "arguments": {"amount": amount}},
            "entities": [{"uid": {"type": "Agent", "id": agent},
                          "attrs": {"role": role, "tenant": "default"}, "parents": []}]}


def _fresh(ask: dict[str, Any]) -> tuple[Any, ...]:
    out = PolicyEngine([PolicySource("p.cedar", TEXT)]).evaluate(**ask)
    return out.allowed, out.determining, out.errors, out.deny_reasons


@pytest.mark.parametrize("change", [
    {"amount": 500}, {"target": "ledger:b"}, {"role": "viewer"}, {"agent": "agent:other"},
    {"amount": "5"}, {"amount": 5.5},
])
def test_a_request_decided_before_is_answered_as_a_fresh_engine_answers_it(
        change: dict[str, Any]) -> None:
    engine = PolicyEngine([PolicySource("p.cedar", TEXT)])
    first = engine.evaluate(**_ask())
    assert first.allowed
    assert engine.evaluate(**_ask()) is first  # the same request: the same decision
    changed = engine.evaluate(**_ask(**change))
    fresh = _fresh(_ask(**change))
    assert (changed.allowed, changed.determining, changed.errors,
            changed.deny_reasons) == fresh
    assert changed is not first  # decided anew
    again = engine.evaluate(**_ask())
    assert again is first


def test_a_decision_that_erred_is_not_kept() -> None:
    engine = PolicyEngine([PolicySource("p.cedar", TEXT + ERRING)])
    ask = _ask()
    first = engine.evaluate(**ask)
    assert not first.allowed and first.errors
    second = engine.evaluate(**ask)
    assert second is not first and not second.allowed and second.errors


def test_submit_checks_a_proposal_this_runtime_did_not_parse(rt: Runtime) -> None:
    raw = proposal("act:mine", "demo.ledger.balance", {"account": "acct-1"})
    built = Proposal.model_validate(raw)  # not through `parse_proposal`: checked in submit
    with pytest.raises(ProposalError, match="namespace"):
        rt.submit(built)


def test_a_parsed_proposal_is_submitted_once_checked(rt: Runtime,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import cradle_kg.loop.runtime as runtime_module

    parsed = rt.parse_proposal(proposal("p-1", "demo.ledger.balance", {"account": "acct-1"}))
    calls: list[object] = []
    real = runtime_module.parse_proposal
    monkeypatch.setattr(runtime_module, "parse_proposal",
                        lambda raw, limits: calls.append(raw) or real(raw, limits))
    assert rt.submit(parsed).status is OutcomeStatus.EXECUTED
    assert calls == []
    # an equal proposal that is another object is checked again
    other = Proposal.model_validate(parsed.model_dump(mode="json"))
    rt.submit(other)
    assert calls == [other]
