"""Finding (twenty-sixth review, the round's own changes): a refusal is not honoured when
gate 2's independent read finds the effect of the key done (``test_560``) — but only when
it found it *exactly*, ``resource_exists`` and ``expected_state`` both verified. A tool
that wrote something else under the key and then raised ``ToolRefused`` (a partial write,
another amount) was read back by its verifier: the key's entry exists, not in the state
intended, and the read names what it saw changed (``VerifierReport.changed``: the
ledger's and the airline's verifiers list the key's writes). The refusal was honoured
anyway: ``failed``, "nothing written", no human task and no compensation, while the read
showed the write standing — where the same read after any other exception opens a human
task.

Now a refusal whose read observed a change (``changed`` not empty) is not honoured
either: the call is the unknown outcome, a human task. A read that says nothing changed,
or cannot say (``changed`` None), keeps the refusal as before (``test_557``, ``test_558``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cradle_kg import Runtime, ToolCall, ToolRefused, ToolSpec, VerifierReport, VerifyRequest
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.packs.reports import read_back
from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass
from tests.conftest import Echo, EchoOut, proposal


def test_a_refusal_after_a_write_the_read_saw_is_escalated(rt: Runtime) -> None:
    written: dict[str, str] = {}

    def writes_other_then_refuses(call: ToolCall) -> EchoOut:
        written[call.idempotency_key] = "half"  # not what was asked
        raise ToolRefused("limit_reached", "refused after a partial write")

    def reads(req: VerifyRequest) -> VerifierReport:
        got = written.get(req.action.idempotency_key)
        return VerifierReport(
            checks=read_back(got is not None, got == req.arguments.value),
            read_at=datetime.now(UTC), evidence={"entry": got}, source="test",
            changed=["test:576"] if got is not None else [])

    rt.register_verifier("test.reads576", reads)
    common: dict[str, Any] = dict(
        version="1", input_model=Echo, output_model=EchoOut,
        side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
        blast_radius=("test:*",), target_from="test:*", verifier="test.reads576")
    rt.register_tool(ToolSpec(id="test.partial576", **common), writes_other_then_refuses)
    out = rt.submit(proposal("p576", "test.partial576", {"value": "v"}, agent="agent:tester",
                             target="test:576"))
    assert written  # the tool wrote
    assert out.status is OutcomeStatus.FAILED, out
    assert out.observation is not None and out.observation.refusal == "limit_reached"
    # before: the refusal honoured — 'refused `limit_reached` … (nothing written …)', no task
    assert any("human task" in r for r in out.reasons), out.reasons
    assert len(open_tasks(rt.journal)) == 1
