"""Cedar is given only the context attributes its policies can read
(:func:`cradle_kg.policy.cedar.context_keys`): the same decisions as with the whole
context, the whole context whenever a policy's use of it cannot be told, and a new
policy set reads its own attributes — a policy added mid-run that reads an attribute no
earlier policy read takes effect on the next call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.policy import PolicyEngine
from cradle_kg.policy.cedar import PolicySource, context_keys
from cradle_kg.records import OutcomeStatus

from .conftest import proposal


@pytest.mark.parametrize(("text", "keys"), [
    ('permit(principal, action, resource) when { context.tool like "x*" };', {"tool"}),
    ('permit(principal, action, resource) when { context has "a b" && context["c"] == 1 '
     '&& context . d == 2 && context has e.f };', {"a b", "c", "d", "e"}),
    # comments and strings are not uses
    ('// context == {}\n@reason("context is whole here")\n'
     'permit(principal, action, resource) when { context.x == "context" };', {"x"}),
    ('permit(principal, action, resource);', set()),
    # whole uses, or what this reading does not know: the whole context
    ('permit(principal, action, resource) when { context == {} };', None),
    ('permit(principal, action, resource) when { [context].contains({}) };', None),
    ('permit(principal, action, resource) /* context */ when { true };', None),
    ('permit(principal, action, resource) when { context["a\\"b"] == 1 };', None),
    ('permit(principal, action, resource) when { context // c\n .x == 1 };', None),
])
def test_the_attributes_a_policy_reads(text: str, keys: set[str] | None) -> None:
    assert context_keys(text) == (None if keys is None else frozenset(keys))


CONTEXT: dict[str, Any] = {
    "tool": "demo.ledger.credit", "side_effect_class": "reversible", "environment": "local",
    "declared_risk": "low", "tenant": "default", "task_id": "t", "on_behalf_of": "",
    "role": "ops", "dry_run": False, "evidence_count": 0,
    "arguments": {"account": "a", "amount": 5000},
    "lineage": {"arguments": {}, "choice_trusted": False, "repeats": False}}

POLICIES = [
    'permit(principal, action, resource) when { context.arguments.amount < 100 };',
    'permit(principal, action, resource);\n'
    '@reason("r") forbid(principal, action, resource) when { context.declared_risk == "low" };',
    'permit(principal, action, resource) when { context.lineage.repeats == false };',
    # reads an attribute the context lacks: an error, denied, pruned or not
    'permit(principal, action, resource) when { context.nothing == 1 };',
    # a type error on a read attribute: fail closed either way
    'permit(principal, action, resource) when { context.tool > 1 };',
    'permit(principal, action, resource) when { context has tenant && !(context has gone) };',
]


@pytest.mark.parametrize("text", POLICIES)
def test_the_same_decision_as_with_the_whole_context(text: str) -> None:
    pruned = PolicyEngine([PolicySource("p.cedar", text)])
    assert pruned.context_keys is not None and len(pruned.context_keys) < len(CONTEXT)
    whole = PolicyEngine([PolicySource("p.cedar", text)])
    whole.context_keys = None
    ask: dict[str, Any] = {"principal": ("Agent", "agent:ops"),
                           "action": ("Action", "demo.ledger.credit"),
                           "resource": ("Resource", "ledger:a"), "context": CONTEXT}
    a, b = pruned.evaluate(**ask), whole.evaluate(**ask)
    assert (a.allowed, a.determining, bool(a.errors), a.deny_reasons) == (
        b.allowed, b.determining, bool(b.errors), b.deny_reasons)


def test_a_policy_added_mid_run_reads_its_own_attributes(rt: Runtime, home: Path) -> None:
    before = rt.policies.context_keys
    assert before is not None and "declared_risk" not in before  # no policy read it yet
    first = rt.submit(proposal("p1", "demo.ledger.credit", {"account": "a", "amount": 1},
                               run_id="run:keys"))
    assert first.status is OutcomeStatus.EXECUTED, first.reasons
    extra = home / "policies-extra"
    extra.mkdir()
    (extra / "risk.cedar").write_text(
        '@id("no-low-risk-credit")\n@reason("low risk credits stop here")\n'
        'forbid(principal, action == Action::"demo.ledger.credit", resource)\n'
        '  when { context.declared_risk == "low" };\n')
    rt.add_policy_paths([extra])
    assert rt.policies.context_keys is not None
    assert "declared_risk" in rt.policies.context_keys
    second = rt.submit(proposal("p2", "demo.ledger.credit", {"account": "a", "amount": 1},
                                run_id="run:keys"))
    assert second.status is OutcomeStatus.DENIED
    assert "low risk credits stop here" in second.reasons
