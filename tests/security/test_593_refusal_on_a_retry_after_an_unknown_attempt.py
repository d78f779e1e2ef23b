"""Finding: **a refusal on a retry was honoured as the key's word, after an attempt whose
outcome is unknown.** A keyed tool that raised (a connection that dropped mid-write: the
effect may have happened) is called again under the same key; when that second call raised
:class:`cradle_kg.ToolRefused` — "*this* call wrote nothing" — the runtime honoured it for
the whole key: ``failed``, final, no lookup, no human task, the same key answering the
refusal for ever, while the first attempt's write was never looked for. Gate 2's read
catches an effect it can see; one it cannot (a read that fails: an upstream that is gone)
was simply lost. The proxy's own refusal of a call its upstream never received
(``test_591``, ``test_592``) would be such a refusal on a retry.

Now: a refusal is the key's word only on a call no attempt that raised came before (the
first call after the intent, or recovery's call after its lookup found no trace). On a
retry of the runtime's retry loop it is an unknown outcome, as the attempt before it: the
tool's lookup is asked (the effect found is verified and committed), else a human task.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
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
#: what the remote system holds (the first attempt wrote it, then its connection dropped)
WRITTEN: dict[str, str] = {}


def read_fails(req: VerifyRequest) -> VerifierReport:
    """The independent read cannot reach the system (it proves nothing)."""
    raise ConnectionError("the system cannot be read now")


def reads_written(req: VerifyRequest) -> VerifierReport:
    """The independent read of what the system holds under the key."""
    there = _status(req.action.idempotency_key in WRITTEN)
    return VerifierReport(
        checks=(VerificationCheck(name="resource_exists", status=there),
                VerificationCheck(name="expected_state", status=there)),
        read_at=datetime.now(UTC), evidence={"read": sorted(WRITTEN)}, source="test")


def _status(ok: bool) -> VerificationStatus:
    return VerificationStatus.VERIFIED if ok else VerificationStatus.FAILED


@pytest.fixture
def tools(rt: Runtime) -> Runtime:
    return register(rt)


def register(rt: Runtime) -> Runtime:
    """The tools of this test registered in ``rt`` (by the crashing child too)."""
    CALLS.clear()
    WRITTEN.clear()

    def flaky(call: ToolCall) -> EchoOut:
        CALLS["flaky"] += 1
        if CALLS["flaky"] == 1:
            WRITTEN[call.idempotency_key] = "v"  # written, and the answer is lost
            raise ConnectionResetError("the connection dropped after the request was sent")
        raise ToolRefused("not_reached", "this call reached nothing")

    def lookup(call: ToolCall) -> dict[str, Any] | None:
        CALLS["lookup"] += 1
        return {"value": WRITTEN[call.idempotency_key]} \
            if call.idempotency_key in WRITTEN and call.tool_id == "test.found593" else None

    common: dict[str, Any] = dict(
        version="1", input_model=Echo, output_model=EchoOut,
        side_effect_class=SideEffectClass.EXTERNAL_WRITE, idempotency=IdempotencyClass.KEYED,
        blast_radius=("test:*",), target_from="test:*")
    rt.register_verifier("test.fails593", read_fails)
    rt.register_verifier("test.reads593", reads_written)
    rt.register_tool(ToolSpec(id="test.lost593", verifier="test.fails593", **common), flaky,
                     lookup=lookup)
    rt.register_tool(ToolSpec(id="test.found593", verifier="test.reads593", **common),
                     flaky, lookup=lookup)
    return rt


def _submit(rt: Runtime, pid: str, tool: str) -> Any:
    return rt.submit(proposal(pid, tool, {"value": "v"}, agent="agent:tester",
                              target="test:593"))


def test_a_refusal_after_an_unknown_attempt_is_not_the_keys_word(tools: Runtime) -> None:
    out = _submit(tools, "p593-a", "test.lost593")
    assert CALLS["flaky"] == 2, CALLS  # the first raised, the retry refused
    assert CALLS["lookup"] == 1, CALLS  # the first attempt's effect looked for
    tasks = open_tasks(tools.journal)
    assert len(tasks) == 1, out.reasons  # an unknown outcome: a person looks
    assert any("not honoured" in r for r in out.reasons), out.reasons


def test_the_effect_of_the_first_attempt_found_by_the_lookup_is_committed(
        tools: Runtime) -> None:
    out = _submit(tools, "p593-b", "test.found593")
    assert CALLS["flaky"] == 2 and CALLS["lookup"] == 1, CALLS
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert not open_tasks(tools.journal)


#: the child: submits the call and dies (SIGKILL) after the retry's refusal was journaled,
#: before its verification
CHILD = """
import sys
from cradle_kg import Runtime
from tests.conftest import make_config, register_test_tools
from tests.security.test_593_refusal_on_a_retry_after_an_unknown_attempt import (
    _submit, register)
rt = Runtime(sys.argv[1], config=make_config())
register_test_tools(rt)
register(rt)
_submit(rt, "p593-c", "test.lost593")
print("survived")
"""


def test_recovery_does_not_honour_the_retrys_refusal_either(home: Path) -> None:
    """The process dies after the retry's refusal was journaled, before its outcome:
    recovery settles the call from that observation — as an unknown outcome, as the live
    process would have."""
    import os
    import signal

    from tests.conftest import make_config, register_test_tools
    from tests.racers import run_python

    env = {**os.environ, "CRADLE_CRASH_AT": "before_verification"}
    done = run_python(CHILD, [str(home)], env=env, cwd=Path(__file__).parents[2],
                      timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    with Runtime(home, config=make_config()) as rt:
        register_test_tools(rt)
        register(rt)
        report = rt.recover()
        assert [i.result for i in report.items] == ["reconciled"], report.to_dict()
        from cradle_kg.loop.outcomes import recorded_outcome

        out = recorded_outcome(rt.journal, report.items[0].action_id)
        assert out is not None and any("not honoured" in r for r in out.reasons), out
        assert len(open_tasks(rt.journal)) == 1, out.reasons
