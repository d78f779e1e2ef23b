"""A policy engine keeps its outcomes by the exact request and entities it gave Cedar
(:meth:`cradle_kg.policy.PolicyEngine.evaluate`): an identical request is answered with
the decision Cedar gave it, and every request that differs in anything Cedar is given —
the principal, the action, the resource, a context attribute a policy reads, the entities —
is evaluated on its own. The decisions are those of an engine that keeps nothing, errors
included; a new policy set keeps its own."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from cradle_kg.policy import PolicyEngine
from cradle_kg.policy import cedar as cedar_module
from cradle_kg.policy.cedar import PolicyOutcome, PolicySource

POLICIES = (
    '@id("small") permit(principal, action, resource) when { context.amount < 100 };\n'
    '@id("ops") @requires_approval("true")\n'
    'permit(principal in Role::"ops", action == Action::"credit", resource);\n'
    '@id("no-b") @reason("not on b") forbid(principal, action, resource == Resource::"b")\n'
    '  when { context.kind == "w" };\n'
    # an error when the attribute is absent: fail closed, the same way every time
    '@id("needs-x") permit(principal, action, resource) when { context.x == 1 };\n')


def fresh_outcome(principal: tuple[str, str], action: tuple[str, str],
                  resource: tuple[str, str], context: dict[str, Any],
                  entities: list[dict[str, Any]]) -> PolicyOutcome:
    """What an engine that has decided nothing yet answers."""
    return PolicyEngine([PolicySource("p.cedar", POLICIES)]).evaluate(
        principal=principal, action=action, resource=resource, context=context,
        entities=entities)


def cases() -> list[dict[str, Any]]:
    agents = [("Agent", "a"), ("Agent", "b")]
    actions = [("Action", "credit"), ("Action", "debit")]
    resources = [("Resource", "a"), ("Resource", "b")]
    contexts: list[dict[str, Any]] = [
        {"amount": 5, "kind": "r", "x": 1}, {"amount": 500, "kind": "r", "x": 1},
        {"amount": 5, "kind": "w", "x": 1}, {"amount": 500, "kind": "w"},
        {"amount": 5.0, "kind": "r", "x": 1}, {"amount": True, "kind": "r", "x": 1},
        {"amount": 500, "kind": "r", "x": 1, "unread": "differs"}]
    roles: list[list[dict[str, Any]]] = [
        [], [{"uid": {"type": "Agent", "id": "a"}, "attrs": {},
              "parents": [{"type": "Role", "id": "ops"}]}]]
    return [{"principal": p, "action": a, "resource": r, "context": c, "entities": e}
            for p, a, r, c, e in itertools.product(agents, actions, resources, contexts,
                                                   roles)]


def test_the_same_decisions_as_an_engine_that_keeps_none() -> None:
    engine = PolicyEngine([PolicySource("p.cedar", POLICIES)])
    asked = cases()
    expected = [fresh_outcome(**ask) for ask in asked]
    kinds = {(o.allowed, bool(o.errors), o.requires_approval) for o in expected}
    assert len(kinds) >= 3, kinds  # the cases reach permits, denials and errors
    for _ in range(2):  # the second pass is answered from what the first kept
        for ask, want in zip(asked, expected, strict=True):
            assert engine.evaluate(**ask) == want, ask
    assert 0 < len(engine._decisions) <= len(asked)


def test_a_context_attribute_a_policy_reads_is_a_new_request() -> None:
    engine = PolicyEngine([PolicySource("p.cedar", POLICIES)])
    ask: dict[str, Any] = {"principal": ("Agent", "c"), "action": ("Action", "debit"),
                           "resource": ("Resource", "a"), "entities": []}
    assert engine.evaluate(**ask, context={"amount": 5, "kind": "r", "x": 0}).allowed
    assert not engine.evaluate(**ask, context={"amount": 500, "kind": "r", "x": 0}).allowed
    assert engine.evaluate(**ask, context={"amount": 5, "kind": "r", "x": 0}).allowed
    assert len(engine._decisions) == 2


def test_an_attribute_no_policy_reads_shares_the_decision() -> None:
    engine = PolicyEngine([PolicySource("p.cedar", POLICIES)])
    ask: dict[str, Any] = {"principal": ("Agent", "c"), "action": ("Action", "debit"),
                           "resource": ("Resource", "a"), "entities": []}
    first = engine.evaluate(**ask, context={"amount": 5, "kind": "r", "x": 1, "u": 1})
    again = engine.evaluate(**ask, context={"amount": 5, "kind": "r", "x": 1, "u": 2})
    assert first is again and len(engine._decisions) == 1


def test_past_its_bound_it_starts_over_and_decides_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cedar_module, "_DECISIONS", 5)
    engine = PolicyEngine([PolicySource("p.cedar", POLICIES)])
    asked = cases()[:40]
    for ask in asked * 2:
        assert engine.evaluate(**ask) == fresh_outcome(**ask)
        assert len(engine._decisions) <= 5


def test_a_context_cedar_cannot_be_given_fails_closed_and_is_not_kept() -> None:
    engine = PolicyEngine([PolicySource("p.cedar", POLICIES)])
    out = engine.evaluate(principal=("Agent", "a"), action=("Action", "credit"),
                          resource=("Resource", "a"), context={"amount": {1, 2}})
    assert not out.allowed and out.errors
    assert "cedar could not evaluate the request" in out.errors[0]
    assert engine._decisions == {}


def test_a_new_policy_set_keeps_its_own() -> None:
    ask: dict[str, Any] = {"principal": ("Agent", "c"), "action": ("Action", "debit"),
                           "resource": ("Resource", "b"),
                           "context": {"amount": 5, "kind": "w", "x": 1}}
    lenient = PolicyEngine([PolicySource("p.cedar", 'permit(principal, action, resource);')])
    assert lenient.evaluate(**ask).allowed
    strict = PolicyEngine([PolicySource("p.cedar", POLICIES)])
    assert not strict.evaluate(**ask).allowed
    assert lenient.evaluate(**ask).allowed


def test_a_long_request_is_decided_and_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cedar_module, "_DECISION_TEXT", 64)
    engine = PolicyEngine([PolicySource("p.cedar", POLICIES)])
    ask: dict[str, Any] = {"principal": ("Agent", "c"), "action": ("Action", "debit"),
                           "resource": ("Resource", "a"), "entities": []}
    long = {"amount": 5, "kind": "r" * 80, "x": 0}
    assert engine.evaluate(**ask, context=long) == fresh_outcome(**ask, context=long)
    assert engine._decisions == {}
    short = {"amount": 5, "kind": "r", "x": 0}
    assert engine.evaluate(**ask, context=short).allowed
    assert len(engine._decisions) == 1
