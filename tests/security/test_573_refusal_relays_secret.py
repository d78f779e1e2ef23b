"""Finding (twenty-sixth review, the round's own changes): a tool's typed refusal
(``ToolRefused``, ``test_557``) whose message quotes a secret argument relayed it in clear.
Every text the runtime relays from code it did not write is masked with the proposal's
secret values (``test_136``: a validator's finding, a verifier's detail, a tool's error in
gate 2's ``output_schema`` check) — but the refusal's reason, put first in the outcome's
reasons, and the refusal's ``message`` in the answer an agent reads (MCP, LangGraph, the
JSON API: ``integrations.calls.render``) were the tool's message as raised: the key the
agent was made to send was read back by it, journaled in ``run.outcome`` and projected as
the graph's ``cradle:reason``.

Now the refusal's reason and the rendered refusal are masked as the other relayed texts
are (``**********``); the observation keeps the tool's error as it was (strict replay
serves it), as it keeps a raised exception's.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cradle_kg import ToolRefused
from cradle_kg.integrations.calls import render
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.loop.runtime import Runtime
from cradle_kg.packs.reports import read_back
from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass
from cradle_kg.redaction import MASK
from cradle_kg.tools import ToolCall, ToolSpec
from cradle_kg.verifiers import VerifierReport, VerifyRequest
from tests.lineage.kit import Free, lineage_runtime, submit

KEY = "sk-live-5730-refused"


class RotateKey(BaseModel):
    service: str
    api_key: str


def _nothing_there(req: VerifyRequest) -> VerifierReport:
    """The independent read: no key was written (the refusal is honoured)."""
    return VerifierReport(checks=read_back(False, False), read_at=datetime.now(UTC),
                          evidence={"key": None})


def _refuses(call: ToolCall) -> Free:
    raise ToolRefused("key_revoked", f"the key `{call.arguments.api_key}` was revoked")


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    runtime = lineage_runtime(tmp_path / "home")
    runtime.register_tool(ToolSpec(
        id="rotate_key", version="1", input_model=RotateKey, output_model=Free,
        secret_arguments=("api_key",), verifier="nothing_there",
        side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
        target_from="account:*"), _refuses)
    runtime.register_verifier("nothing_there", _nothing_there)
    runtime.record_input("run:t", "Please rotate the billing key.", author="user:emma")
    try:
        yield runtime
    finally:
        runtime.close()


def _outcome_reasons(rt: Runtime) -> list[Any]:
    return [e.payload["outcome"]["reasons"] for e in rt.journal.events(run_id="run:t")
            if e.kind == "run.outcome"]


def test_a_refusal_never_relays_the_secret_it_quotes(rt: Runtime) -> None:
    out = submit(rt, 0, "rotate_key", {"service": "billing", "api_key": KEY},
                 target="account:billing")
    assert out.status is OutcomeStatus.FAILED, out.reasons
    assert out.observation is not None and out.observation.refusal == "key_revoked"
    assert open_tasks(rt.journal) == []  # still the honoured refusal
    said = " ".join(out.reasons)
    assert "was revoked" in said and MASK in said
    assert KEY not in said, out.reasons
    assert KEY not in str(_outcome_reasons(rt))
    answer = render(out, "rotate_key", step=0)
    assert answer.structured["refusal"]["code"] == "key_revoked"
    assert "was revoked" in answer.structured["refusal"]["message"]
    assert KEY not in answer.text and KEY not in str(answer.structured), answer.text
    store = rt.graph()
    if store is not None:
        text = "\n".join(str(r["o"].value) for r in store.query(
            "SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }"))
        assert KEY not in text
