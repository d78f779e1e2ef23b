"""A secret argument is secret under every name the tool's model reads it by.

Finding (met while closing ``test_365``, the same cause): the secret arguments were the
names the contract declares (``secret_arguments``) and those its JSON Schema marks, each
under one name. A model reads a field under its alias, and with ``populate_by_name`` under
its own name too: the agent wrote the other one. ``rotate`` declares ``api_key`` secret,
its model reads ``apiKey`` (the name its JSON Schema, shown to MCP clients, gives): the key
written as ``apiKey`` was no secret — the graph held it in clear (``cradle:argumentValue
"sk-live-…"``), where the same key under ``api_key`` is its mask.

Now a secret argument is secret under each name its field is read by
(:func:`cradle_kg.tools.names_read_as`): masked in the graph however it is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field

from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass
from cradle_kg.redaction import MASK
from cradle_kg.tools import ToolSpec
from tests.lineage.kit import Free
from tests.security.test_131_secret_arguments_graph import _graph_text, _runtime, _submit


class Rotate(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    service: str
    api_key: str = Field(alias="apiKey")


@pytest.mark.parametrize("name", ["api_key", "apiKey"])
def test_a_secret_is_masked_in_the_graph_under_any_name(tmp_path: Path, name: str) -> None:
    rt, _ = _runtime(tmp_path / "home")
    try:
        rt.register_tool(ToolSpec(
            id="rotate", version="1", input_model=Rotate, output_model=Free,
            side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
            target_from="account:*", verifier="ok", sensitive_arguments=("api_key",),
            secret_arguments=("api_key",)), lambda call: Free(result="ok"))
        rt.record_input("run:s", "Rotate the billing key to sk-live-4242-zz.",
                        author="user:emma")
        out = _submit(rt, 1, "rotate", {"service": "billing", name: "sk-live-4242-zz"})
        assert out.status is OutcomeStatus.EXECUTED, out.reasons
        values, text = _graph_text(rt)
        # before: under `apiKey`, `cradle:argumentValue "sk-live-4242-zz"`
        assert "sk-live-4242-zz" not in text
        assert {"name": name, "value": MASK} in values, values
    finally:
        rt.close()
