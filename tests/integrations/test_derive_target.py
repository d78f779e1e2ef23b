"""One derivation of a call's target from its arguments (``ToolSpec.derive_target``), which
the MCP gateway, the LangGraph adapter and a pack's own proposals use alike, and which gate 1
accepts for every call whose arguments it can name a target for.

Before, MCP and LangGraph (``calls.derive_target``) answered ``tool:<id>`` — a
``target_mismatch`` denial — for a tool whose pattern for the arguments is a wildcard (an id
missing or not a string: the tool accepts any target of that kind, its own answer deciding
the call) and for an id holding a glob character of a callable ``target_from`` (the escaped
pattern itself was taken for a wildcard), where a caller of ``Runtime.submit`` naming the
plain target went through."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from cradle_kg import ToolSpec
from cradle_kg.integrations.calls import derive_target
from cradle_kg.records import IdempotencyClass, SideEffectClass
from cradle_kg.tools import glob_instance


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class Strict(BaseModel):
    account: str


def _of(value: Any) -> str:
    if not isinstance(value, str):
        return "thing:*"  # names no one thing: any thing will do
    return "thing:" + "".join(f"[{c}]" if c in "*?[]" else c for c in value)


def _spec(target_from: str | Callable[[BaseModel], str] | None,
          model: type[BaseModel] = Loose) -> ToolSpec:
    return ToolSpec(id="t.act", version="1", input_model=model, output_model=model,
                    verifier="v", side_effect_class=SideEffectClass.REVERSIBLE,
                    idempotency=IdempotencyClass.NATURAL, target_from=target_from)


CALLABLE = _spec(lambda a: _of(a.model_dump().get("id")))
TEMPLATE = _spec("ledger:{account}", Strict)


@pytest.mark.parametrize(("spec", "arguments", "target"), [
    (CALLABLE, {"id": "ab"}, "thing:ab"),
    (CALLABLE, {"id": "a*b?[c]"}, "thing:a*b?[c]"),  # escaped, not a wildcard
    (CALLABLE, {}, "thing:"),                          # the wildcard: its literal part
    (CALLABLE, {"id": 5}, "thing:"),
    (CALLABLE, {"id": ["x"]}, "thing:"),
    (TEMPLATE, {"account": "acct-*"}, "ledger:acct-*"),
    (TEMPLATE, {"account": "acct-1"}, "ledger:acct-1"),
])
def test_the_derived_target_is_one_gate_1_accepts(spec: ToolSpec, arguments: dict[str, Any],
                                                  target: str) -> None:
    assert derive_target(spec, arguments) == spec.derive_target(arguments) == target
    assert spec.target_problem(target, spec.parse_arguments(arguments)) is None


@pytest.mark.parametrize(("spec", "arguments"), [
    (TEMPLATE, {}),                     # the contract refuses the arguments
    (TEMPLATE, {"account": 5}),
    (_spec("ledger:{account}"), {}),    # the template's argument is missing
    (_spec("ledger:{account}"), {"account": True}),
    (_spec(None, Loose), {"x": 1}),     # no target_from
])
def test_no_target_is_tool_id_which_gate_1_denies_with_the_reason(
        spec: ToolSpec, arguments: dict[str, Any]) -> None:
    assert spec.derive_target(arguments) == "tool:t.act"


@pytest.mark.parametrize(("pattern", "instance"), [
    ("a:b", "a:b"), ("a:[*]", "a:*"), ("a:[]]x", "a:]x"), ("a:[[]", "a:["),
    ("a:*", "a:"), ("a:x?y", "a:x"), ("a:[ab]", "a:"), ("a:[!]x", "a:"), ("", ""),
])
def test_glob_instance(pattern: str, instance: str) -> None:
    assert glob_instance(pattern) == instance
