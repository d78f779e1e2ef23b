"""Finding: a tool that knew it wrote nothing had no way to say so. Every exception out of
a tool is an unknown outcome, so a keyed tool refusing a call (a closed account, a limit
of its own) was called again twice under the same key — each call asking the remote
system again, and free to answer differently the third time — then its lookup was asked,
and a human task opened for a call that wrote nothing.
Now a :class:`cradle_kg.ToolRefused` raised by the tool is final for its key, as a
non-retryable application error is in Temporal: called once, never retried, its lookup
never asked, no human task; the same key again answers the recorded refusal without
calling the tool. Any other exception stays an unknown outcome exactly as before (retried
under the key when its class allows it, the lookup asked, a human task), and so does a
``ToolRefused`` whose code is not a code (the refusal itself is malformed: fail closed).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from cradle_kg import Runtime, ToolCall, ToolRefused, ToolSpec, VerifierReport, VerifyRequest
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.records import (
    IdempotencyClass,
    OutcomeStatus,
    SideEffectClass,
    VerificationCheck,
    VerificationStatus,
)
from tests.conftest import Echo, EchoOut, proposal

CALLS: Counter[str] = Counter()


def nothing_written(req: VerifyRequest) -> VerifierReport:
    """The independent read: no effect of the key anywhere."""
    return VerifierReport(
        checks=(VerificationCheck(name="resource_exists", status=VerificationStatus.FAILED,
                                  detail="nothing written under the key"),),
        read_at=datetime.now(UTC), evidence={"read": "nothing"}, source="test")


@pytest.fixture
def tools(rt: Runtime) -> Runtime:
    CALLS.clear()

    def refusing(call: ToolCall) -> EchoOut:
        CALLS["refusing"] += 1
        raise ToolRefused("over_limit", "the amount is over this account's own limit")

    def raising(call: ToolCall) -> EchoOut:
        CALLS["raising"] += 1
        raise ValueError("the connection dropped mid-write")

    def malformed(call: ToolCall) -> EchoOut:
        CALLS["malformed"] += 1
        raise ToolRefused("Not a code!", "refused")

    def lookup(call: ToolCall) -> dict[str, Any] | None:
        CALLS["lookup:" + call.tool_id] += 1
        return None

    common: dict[str, Any] = dict(
        version="1", input_model=Echo, output_model=EchoOut,
        side_effect_class=SideEffectClass.EXTERNAL_WRITE, idempotency=IdempotencyClass.KEYED,
        blast_radius=("test:*",), target_from="test:*", verifier="test.nothing558")
    rt.register_verifier("test.nothing558", nothing_written)
    for name, fn in (("refusing", refusing), ("raising", raising), ("malformed", malformed)):
        rt.register_tool(ToolSpec(id=f"test.{name}558", **common), fn, lookup=lookup)
    return rt


def _submit(rt: Runtime, pid: str, tool: str) -> Any:
    return rt.submit(proposal(pid, tool, {"value": "v"}, agent="agent:tester",
                              target="test:558"))


def test_a_refusal_is_called_once_and_answered_again_from_the_record(tools: Runtime) -> None:
    out = _submit(tools, "p558-a", "test.refusing558")
    assert out.status is OutcomeStatus.FAILED, out
    assert out.observation is not None and out.observation.refusal == "over_limit"
    # before: 3 calls (two retries under the key) and the lookup asked, a human task
    assert CALLS["refusing"] == 1, CALLS
    assert CALLS["lookup:test.refusing558"] == 0, CALLS
    assert not open_tasks(tools.journal)
    again = _submit(tools, "p558-a", "test.refusing558")  # the same proposal: the same key
    assert again.status is OutcomeStatus.FAILED and again.observation is not None
    assert again.observation.refusal == "over_limit"
    assert again.reasons == out.reasons or again.replayed
    assert CALLS["refusing"] == 1, CALLS


def test_any_other_exception_is_still_an_unknown_outcome(tools: Runtime) -> None:
    out = _submit(tools, "p558-b", "test.raising558")
    assert out.status is OutcomeStatus.FAILED, out
    assert out.observation is not None and out.observation.refusal is None
    assert CALLS["raising"] == 3, CALLS  # retried twice under the key, as before
    assert CALLS["lookup:test.raising558"] == 1, CALLS
    assert any("human task" in r for r in out.reasons), out.reasons
    assert len(open_tasks(tools.journal)) == 1


def test_a_malformed_refusal_fails_closed(tools: Runtime) -> None:
    out = _submit(tools, "p558-c", "test.malformed558")
    assert out.observation is not None and out.observation.refusal is None, out
    assert CALLS["malformed"] == 3, CALLS
    assert any("human task" in r for r in out.reasons), out.reasons
