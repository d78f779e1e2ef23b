"""Finding (the limit of a refusal): ``ToolRefused`` is the tool's promise that it wrote
nothing, and the runtime honours it without a person — so a tool that wrote and *then*
raised it (a bug, or a refusal checked after the write) would end ``failed`` with nobody
asked while its effect stands.
Now gate 2 still reads the target back after a refusal (as after every call): when the
independent read finds the effect of the key done (``verified``), the refusal is not
honoured — the outcome is the unknown one, a human task, as for any other exception. A
refusal raised after a write that the verifier cannot see stays the tool author's to
avoid (documented). A read that finds nothing keeps the refusal (``test_558``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

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


def test_a_refusal_after_a_write_the_verifier_sees_is_escalated(rt: Runtime) -> None:
    written: dict[str, str] = {}

    def writes_then_refuses(call: ToolCall) -> EchoOut:
        written[call.idempotency_key] = "done"
        raise ToolRefused("too_late", "refused after the write")

    def reads(req: VerifyRequest) -> VerifierReport:
        there = VerificationStatus.VERIFIED if req.action.idempotency_key in written \
            else VerificationStatus.FAILED
        return VerifierReport(
            checks=(VerificationCheck(name="resource_exists", status=there),
                    VerificationCheck(name="expected_state", status=there)),
            read_at=datetime.now(UTC), evidence={"written": sorted(written)}, source="test")

    rt.register_verifier("test.reads560", reads)
    common: dict[str, Any] = dict(
        version="1", input_model=Echo, output_model=EchoOut,
        side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
        blast_radius=("test:*",), target_from="test:*", verifier="test.reads560")
    rt.register_tool(ToolSpec(id="test.late560", **common), writes_then_refuses)
    out = rt.submit(proposal("p560", "test.late560", {"value": "v"}, agent="agent:tester",
                             target="test:560"))
    assert out.status is OutcomeStatus.FAILED, out
    assert out.observation is not None and out.observation.refusal == "too_late"
    assert any("human task" in r for r in out.reasons), out.reasons
    assert len(open_tasks(rt.journal)) == 1
