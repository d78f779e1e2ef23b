"""Finding (twenty-sixth review, the round's own changes): the gateway read a
``ToolRefused``'s ``code`` and ``message`` as attributes the base class sets — inside the
``except`` that turns whatever a tool raised into an observation. A subclass that does not
run ``ToolRefused.__init__`` (a tool's own refusal type built on ``Exception.__init__``)
has no ``message``: reading it raised ``AttributeError`` out of ``submit`` *after the tool
ran* — no observation, no verification, no outcome, a traceback for the caller, the
intent left open. A ``message`` set after construction was journaled whole, past the
refusal's documented bound (500 characters).

Now a refusal's code and message are read once, guarded (``tools.refusal_of``): a
refusal whose code or message cannot be read, or is not a code and a text, is an unknown
outcome as any other exception; the message journaled is bounded
(``REFUSAL_MESSAGE_CHARS``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from cradle_kg import Runtime, ToolCall, ToolRefused, ToolSpec, VerifierReport, VerifyRequest
from cradle_kg.errors import REFUSAL_MESSAGE_CHARS
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.records import (
    IdempotencyClass,
    Outcome,
    OutcomeStatus,
    SideEffectClass,
    VerificationCheck,
    VerificationStatus,
)
from tests.conftest import Echo, EchoOut, proposal


class NoInit(ToolRefused):
    """A tool's own refusal type that never runs ``ToolRefused.__init__``."""

    def __init__(self, why: str) -> None:
        Exception.__init__(self, why)


def _raises(exc: Exception) -> Callable[[ToolCall], EchoOut]:
    def tool(call: ToolCall) -> EchoOut:
        raise exc
    return tool


def _nothing(req: VerifyRequest) -> VerifierReport:
    return VerifierReport(
        checks=(VerificationCheck(name="resource_exists", status=VerificationStatus.FAILED),
                VerificationCheck(name="expected_state", status=VerificationStatus.FAILED)),
        read_at=datetime.now(UTC), evidence={"read": "nothing"}, source="test")


def _submit(rt: Runtime, name: str, exc: Exception) -> Outcome:
    rt.register_verifier("test.nothing574", _nothing)
    rt.register_tool(ToolSpec(
        id=f"test.{name}574", version="1", input_model=Echo, output_model=EchoOut,
        side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
        blast_radius=("test:*",), target_from="test:*", verifier="test.nothing574"),
        _raises(exc))
    return rt.submit(proposal(f"p574{name}", f"test.{name}574", {"value": "v"},
                              agent="agent:tester", target="test:574"))


def test_a_refusal_without_its_message_is_an_observed_unknown_outcome(rt: Runtime) -> None:
    # before: AttributeError: 'NoInit' object has no attribute 'message' (out of submit)
    out = _submit(rt, "noinit", NoInit("nothing written, says the tool"))
    assert out.status is OutcomeStatus.FAILED
    assert out.observation is not None
    assert out.observation.refusal is None
    assert "nothing written, says the tool" in str(out.observation.error)
    assert len(open_tasks(rt.journal)) == 1  # unknown: a person looks


def test_a_message_set_later_is_bounded(rt: Runtime) -> None:
    exc = ToolRefused("too_long", "short")
    exc.message = "x" * (REFUSAL_MESSAGE_CHARS * 20)
    out = _submit(rt, "long", exc)
    obs = out.observation
    assert obs is not None and obs.refusal == "too_long"
    assert len(str(obs.error)) < REFUSAL_MESSAGE_CHARS + 100, len(str(obs.error))

