"""A secret argument refused for its shape is neither quoted nor left unmarked.

Finding (eighth attack review): gate 1 learns a tool's secret arguments once the proposal's
structure holds (``GateResult.spec``). A proposal refused *for* its structure — arguments
that break the tool's schema — therefore journaled no ``secret_arguments`` mark, and its
reason was relayed as written: an ``mcp proxy`` tool whose upstream marks ``api_key``
``writeOnly`` (``test_133``) checks it against the upstream's schema, whose messages quote
the value (``api_key: 'sk-live-…' is too long``). The agent's answer, the journaled
decision and the graph's reasons held the key, and with no mark the views (``runs show``,
``test_133``) printed the proposal's key in clear. Measured before the fix: the key in the
outcome's reasons, in ``decision.made``, and unmasked by the views' masking of the run's
events.

Now the tool's secrets are known as soon as the tool is: the refusal's reasons mask the
value and the proposal's events carry the mark (``**********`` in every view).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass
from cradle_kg.redaction import MASK, mask_payload, secrets_by_tool
from cradle_kg.tools import ToolSpec
from tests.lineage.kit import Free, lineage_runtime, submit, verified

pytest.importorskip("mcp")

KEY = "sk-live-Q81-Vt77-93aa"
SCHEMA = {"type": "object", "required": ["service", "api_key"], "properties": {
    "service": {"type": "string"},
    "api_key": {"type": "string", "writeOnly": True, "maxLength": 12}}}


def rotate_key_runtime(home: Path, schema: dict[str, Any]) -> Runtime:
    """A lineage runtime with ``rotate_key``, an ``mcp proxy`` tool checked against the
    upstream's ``schema`` (its ``api_key`` marked ``writeOnly``: a secret)."""
    from cradle_kg.integrations.proxy import input_model

    rt = lineage_runtime(home)
    rt.register_tool(ToolSpec(
        id="rotate_key", version="1", input_model=input_model("rotate_key", schema),
        output_model=Free, side_effect_class=SideEffectClass.REVERSIBLE,
        idempotency=IdempotencyClass.NATURAL, target_from="account:*", verifier="ok"),
        lambda call: Free(result="ok"))
    rt.register_verifier("ok", verified(lambda: {}))
    return rt


def test_a_refused_secret_is_masked_and_marked(tmp_path: Path) -> None:
    rt = rotate_key_runtime(tmp_path / "home", SCHEMA)
    try:
        out = submit(rt, 0, "rotate_key", {"service": "billing", "api_key": KEY},
                     target="account:billing")
        events = list(rt.journal.events(run_id="run:t"))
    finally:
        rt.close()
    assert out.status is OutcomeStatus.DENIED
    said = " ".join(out.reasons)
    assert "is too long" in said and MASK in said, said
    assert KEY.lower() not in said.lower()
    decided = next(e for e in events if e.kind == "decision.made")
    assert KEY.lower() not in str(decided.payload["decision"]).lower()
    for ev in events:
        if ev.kind in ("proposal.received", "decision.made"):
            assert ev.payload.get("secret_arguments") == ["api_key"], ev.kind
    # what the views show of the run's events (runs show, test_133)
    payloads: list[dict[str, Any]] = [e.payload for e in events]
    by_tool, values = secrets_by_tool(payloads)
    shown = str([mask_payload(p, by_tool, values) for p in payloads])
    assert KEY.lower() not in shown.lower() and MASK in shown
