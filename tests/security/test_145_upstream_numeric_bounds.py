"""An unpinned upstream tool's numeric bounds show the agent no number of the upstream's.

Finding (ninth attack review; the rule of ``test_137`` left the numbers out): an unpinned
tool's grammar showed ``enum``/``const``/``format`` values only when plain words or short
numbers, but kept every numeric bound as the upstream wrote it — ``minimum``, ``maximum``,
``exclusiveMinimum``/``exclusiveMaximum``, ``multipleOf``, ``maxLength`` and the other
counts are any number JSON Schema allows, so ``"maximum": 4155550123`` or ``"minimum":
60161331926819`` (a phone's, an account's number) reached the agent's client as the call's
grammar, with no origin lineage could name; and a call that broke the bound was told it
(``… is less than the minimum of 60161331926819``).

Now a bound is shown only when it is :func:`~cradle_kg.integrations.upstream_pins.plain` (no five
digits in a row however written: ``4155550123.0`` and ``6.0161331926819e13`` alike), else
left out of the grammar (the whole schema still checks the call); a call breaking such a
bound is told the keyword only. Pinned, all is shown as before.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

pytest.importorskip("mcp")

PHONE = 4155550123
ACCOUNT = 60161331926819

BOUNDS = {"type": "object", "required": ["amount"], "properties": {
    "amount": {"type": "number", "minimum": ACCOUNT, "maximum": float(ACCOUNT * 10)},
    "count": {"type": "integer", "exclusiveMaximum": PHONE, "multipleOf": 3},
    "step": {"type": "number", "multipleOf": 41555.50123},
    "code": {"type": "string", "maxLength": PHONE, "minLength": 2},
    "tags": {"type": "array", "maxItems": 6.0161331926819e13}}}


def _shown(schema: dict[str, Any], *, pin: bool = False) -> tuple[dict[str, Any], Any]:
    from mcp import types

    from cradle_kg.integrations.contracts import ToolContract
    from cradle_kg.integrations.mcp_server import tool_entry
    from cradle_kg.integrations.proxy import ProxiedTool, Upstream
    from cradle_kg.integrations.upstream_pins import pin_of
    from cradle_kg.records import SideEffectClass

    tool = types.Tool(name="pay", description="pays", inputSchema=schema)
    contract = ToolContract(side_effect=SideEffectClass.READ_ONLY,
                            pin=pin_of(tool) if pin else None)
    upstream = Upstream(session=None, source="bank")  # type: ignore[arg-type]
    spec = ProxiedTool(upstream, tool.name, "up.pay", contract).spec(tool)
    entry = tool_entry(spec).model_dump(mode="json", by_alias=True, exclude_none=True)
    return entry, spec.input_model


def _said(model: Any, arguments: dict[str, Any]) -> str:
    """What the refusal says (its messages; pydantic quotes the agent's own input too)."""
    with pytest.raises(ValidationError) as refused:
        model.model_validate(arguments)
    return "; ".join(str(e["msg"]) for e in refused.value.errors())


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def test_a_long_numeric_bound_is_not_shown_unpinned() -> None:
    entry, _ = _shown(BOUNDS)
    text = json.dumps(entry)
    for number in ("4155550123", "60161331926819", "41555"):
        assert number not in _digits(text), text
    props = entry["inputSchema"]["properties"]
    assert props["amount"] == {"type": "number"}
    assert props["count"] == {"type": "integer", "multipleOf": 3}  # a short one stays
    assert props["code"] == {"type": "string", "minLength": 2}
    assert props["tags"] == {"type": "array"}


def test_a_call_breaking_a_long_bound_is_not_told_it() -> None:
    _, model = _shown(BOUNDS)
    for arguments in ({"amount": 1}, {"amount": ACCOUNT, "count": PHONE + 3},
                      {"amount": ACCOUNT, "step": 1}):
        said = _said(model, arguments)
        assert "4155550123" not in said and "60161331926819" not in said, said
        assert "41555.50123" not in said, said
        assert "does not satisfy the tool's `" in said, said
    # a short bound the agent is shown is said as before
    assert "is not a multiple of 3" in _said(model, {"amount": ACCOUNT, "count": 4})
    assert "is too short" in _said(model, {"amount": ACCOUNT, "code": "x"})


def test_a_pinned_tool_shows_and_tells_its_bounds() -> None:
    entry, model = _shown(BOUNDS, pin=True)
    assert entry["inputSchema"]["properties"]["amount"]["minimum"] == ACCOUNT
    assert "60161331926819" in _said(model, {"amount": 1})
