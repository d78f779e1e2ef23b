"""A workflow of the agent ``agent:tester`` whose tool step runs before its human one
(``test_249`` … ``test_251``): the window between a run's start and its first
``human.requested``, held open by the tool step as long as a test wants."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from httpx import Response

from cradle_kg import Runtime, ToolCall, ToolSpec
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.records import IdempotencyClass, SideEffectClass
from tests.conftest import TEST_POLICY, Echo, EchoOut, _verify_ok, make_config

TESTER = "agent:tester"
#: a tool step before the human one, then the review
FLOW = """workflow: gated-review
version: "1"
agent: agent:tester
input:
  type: object
  properties:
    label: {type: string, maxLength: 20}
  required: [label]
  additionalProperties: false
steps:
  - id: prepare
    kind: tool
    tool: test.gate
    tools: [test.gate]
    target: "test:gate"
    inputs: {value: input.label}
    input:
      type: object
      properties:
        value: {type: string}
      required: [value]
      additionalProperties: false
    output:
      type: object
      properties:
        ok: {type: boolean}
      required: [ok]
  - id: review
    kind: human
    question: "Go on with {value}?"
    answers: [go, stop]
    inputs: {value: input.label}
    rule_fields: [value]
"""


def gated_home(root: Path, *, waiting: int) -> Path:
    """A home whose ``agent:tester`` runs ``gated-review`` (``workflows/``), at most
    ``waiting`` things waiting for a person on its behalf."""
    config = make_config()
    prepare_home(root, config=config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update={"waiting_per_agent": waiting})}))
    (root / "policies" / "test.cedar").write_text(TEST_POLICY, encoding="utf-8")
    (root / "workflows").mkdir()
    (root / "workflows" / "gated-review.yaml").write_text(FLOW, encoding="utf-8")
    return root


def register_gate(rt: Runtime, gate: Any) -> None:
    """``test.gate``: a tool step that returns once ``gate`` (a barrier) lets it."""

    def held(call: ToolCall) -> EchoOut:
        gate.wait(60)
        return EchoOut()

    if not rt.verifiers.has("test.ok"):
        rt.register_verifier("test.ok", _verify_ok)
    rt.register_tool(ToolSpec(id="test.gate", version="1", input_model=Echo,
                              output_model=EchoOut, side_effect_class=SideEffectClass.REVERSIBLE,
                              idempotency=IdempotencyClass.NATURAL, verifier="test.ok",
                              blast_radius=("test:*",), target_from="test:*"), held)


def start(client: TestClient, token: str, label: str) -> Response:
    """``POST /api/workflows/gated-review/runs`` with ``token``."""
    return client.post("/api/workflows/gated-review/runs", json={"input": {"label": label}},
                       headers={"Authorization": f"Bearer {token}"})


def waiting_runs(rt: Runtime, rounds: int, prefix: str) -> Iterator[str]:
    """``rounds`` runs of ``gated-review`` started one after the other from ``rt`` (its
    tool step let through at once), each yielded once it waits at its review: the races
    of ``test_289``, ``test_290`` and ``tests/workflow/test_cancel.py``, one a round."""
    from cradle_kg.workflow import runner

    register_gate(rt, threading.Barrier(1))
    path = rt.home.root / "workflows" / "gated-review.yaml"
    for r in range(rounds):
        run = f"wf:{prefix}-{r}"
        out = runner.start(runner.open_engine(rt), path, {"label": f"r{r}"}, run_id=run)
        assert out["status"] == "waiting_human", out
        yield run
