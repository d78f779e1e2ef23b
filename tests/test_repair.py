"""Repair, retry, compensation and escalation: every failure form ends somewhere, bounded."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from cradle_kg import (
    OutcomeStatus,
    Proposal,
    Runtime,
    ToolCall,
    ToolSpec,
    Verdict,
    VerifierReport,
)
from cradle_kg.demo.scenario import ledger_entries
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.loop.gate1.findings import Finding
from cradle_kg.records import (
    IdempotencyClass,
    SideEffectClass,
    VerificationCheck,
    VerificationStatus,
)
from cradle_kg.runs import show_run
from cradle_kg.tools import ToolSpec as _Spec

from .conftest import Echo, EchoOut, proposal

# the journal on each backend (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

V = VerificationStatus


def _report(status: VerificationStatus) -> VerifierReport:
    return VerifierReport(
        checks=(VerificationCheck(name="resource_exists", status=status),
                VerificationCheck(name="expected_state", status=status)),
        read_at=datetime.now(UTC), evidence={"read": str(status)}, source="test")


def _tool(tool_id: str, *, cls: SideEffectClass = SideEffectClass.REVERSIBLE,
          idem: IdempotencyClass = IdempotencyClass.NATURAL, verifier: str = "t.ok",
          compensation: str | None = None) -> _Spec:
    return ToolSpec(id=tool_id, version="1", input_model=Echo, output_model=EchoOut,
                    side_effect_class=cls, idempotency=idem, verifier=verifier,
                    compensation_tool=compensation, blast_radius=("test:*",),
                    target_from="test:*")


def _p(pid: str, tool: str, **extra: Any) -> dict[str, Any]:
    return proposal(pid, tool, {"value": "v"}, agent="agent:tester", target="test:1", **extra)


def _kinds(rt: Runtime) -> list[str]:
    return [e.kind for e in rt.journal.events()]


# --- repair ---------------------------------------------------------------------------


def _odd_amounts_need_repair(p: Proposal, spec: object) -> list[Finding]:
    if p.action.arguments.get("amount", 0) % 2:
        return [Finding(code="odd_amount", message="`amount` must be even: repair it",
                        verdict=Verdict.REPAIR)]
    return []


def test_repairs_are_bounded_then_escalate_never_loop(rt: Runtime) -> None:
    rt.register_validator("demo.ledger.credit", _odd_amounts_need_repair, name="even")
    budget = rt.config.repair_budget
    statuses = []
    for attempt in range(budget + 2):
        out = rt.submit(proposal(f"p{attempt}", "demo.ledger.credit",
                                 {"account": "a", "amount": 3}, task_id="t", attempt=attempt))
        statuses.append(out.status)
        assert "`amount` must be even: repair it" in out.reasons
    assert statuses == [OutcomeStatus.REPAIR] * budget + [OutcomeStatus.ESCALATED] * 2
    tasks = open_tasks(rt.journal, run_id="run:t")
    assert [t.code for t in tasks] == ["repair_budget_exhausted"] * 2
    assert show_run(rt.journal, "run:t")[0].status == "escalated"
    # the run is not dead: a proposal that needs no repair still executes
    ok = rt.submit(proposal("p-even", "demo.ledger.credit", {"account": "a", "amount": 4},
                            task_id="t"))
    assert ok.status is OutcomeStatus.EXECUTED


def test_repair_budget_is_per_run(rt: Runtime) -> None:
    rt.register_validator("demo.ledger.credit", _odd_amounts_need_repair, name="even")
    for i in range(rt.config.repair_budget):
        rt.submit(proposal(f"a{i}", "demo.ledger.credit", {"account": "a", "amount": 1},
                           task_id="t1", attempt=i))
    other = rt.submit(proposal("b", "demo.ledger.credit", {"account": "a", "amount": 1},
                               task_id="t2"))
    assert other.status is OutcomeStatus.REPAIR


# --- retry ----------------------------------------------------------------------------


def _flaky(rt: Runtime, tool_id: str, idem: IdempotencyClass, calls: list[str]) -> None:
    def fn(call: ToolCall) -> EchoOut:
        calls.append(call.idempotency_key)
        if len(calls) == 1:
            raise ConnectionError("connection reset")
        return EchoOut()

    def lookup(call: ToolCall) -> EchoOut | None:
        return None

    if not rt.verifiers.has("t.ok"):
        rt.register_verifier("t.ok", lambda req: _report(V.VERIFIED))
    rt.register_tool(_tool(tool_id, idem=idem), fn,
                     lookup=lookup if idem is IdempotencyClass.KEYED else None)


def test_keyed_tool_that_raises_is_retried_with_the_same_key(rt: Runtime) -> None:
    calls: list[str] = []
    _flaky(rt, "test.flaky_keyed", IdempotencyClass.KEYED, calls)
    out = rt.submit(_p("p", "test.flaky_keyed"))
    assert out.status is OutcomeStatus.EXECUTED
    assert len(calls) == 2 and len(set(calls)) == 1
    assert out.action is not None and calls[0] == out.action.idempotency_key
    assert _kinds(rt).count("action.intent") == 1
    retries = rt.journal.events_of_kind("action.retry")
    assert len(retries) == 1 and retries[0].payload["idempotency_key"] == calls[0]
    assert "connection reset" in retries[0].payload["reason"]


def test_tool_of_class_none_that_raises_is_not_retried_and_escalates(rt: Runtime) -> None:
    calls: list[str] = []
    _flaky(rt, "test.flaky_none", IdempotencyClass.NONE, calls)
    out = rt.submit(_p("p", "test.flaky_none"))
    assert out.status is OutcomeStatus.FAILED
    assert len(calls) == 1
    assert rt.journal.events_of_kind("action.retry") == []
    assert [t.code for t in open_tasks(rt.journal)] == ["tool_failed"]
    assert any(r.startswith("escalated: human task") for r in out.reasons)


# --- compensation ---------------------------------------------------------------------


def _compensable(rt: Runtime, *, release_verifies: bool = True,
                 compensation: str = "test.release") -> list[dict[str, Any]]:
    released: list[dict[str, Any]] = []
    rt.register_verifier("t.fails", lambda req: _report(V.FAILED))
    if not rt.verifiers.has("t.ok"):
        rt.register_verifier("t.ok", lambda req: _report(V.VERIFIED))

    def release(call: ToolCall) -> EchoOut:
        released.append({"key": call.idempotency_key,
                         "args": call.arguments.model_dump(), "target": call.target})
        return EchoOut()

    rt.register_tool(_tool("test.reserve", cls=SideEffectClass.COMPENSABLE, verifier="t.fails",
                           compensation=compensation), lambda call: EchoOut())
    rt.register_tool(_tool(compensation, verifier="t.ok" if release_verifies else "t.fails"),
                     release)
    return released


def test_failed_verification_runs_the_compensation_through_both_gates(rt: Runtime) -> None:
    released = _compensable(rt)
    out = rt.submit(_p("p", "test.reserve"))
    # the failure stays a failure, even though it was compensated
    assert out.status is OutcomeStatus.VERIFICATION_FAILED
    assert out.action is not None
    comp_id = "comp:" + out.action.id.removeprefix("act:")
    assert any(f"compensated: `{comp_id}` executed and verified" in r for r in out.reasons)
    assert released == [{"key": released[0]["key"], "args": {"value": "v"},
                         "target": "test:1"}]
    run = list(rt.journal.events(run_id=out.run_id))
    kinds = [e.kind for e in run]
    assert kinds.count("action.intent") == 2 and kinds.count("decision.made") == 2
    assert kinds.index("compensation.requested") < kinds.index("transition.committed")
    link = next(e for e in run if e.kind == "compensation.recorded")
    assert link.payload["failed_action_id"] == out.action.id
    assert link.payload["proposal_id"] == comp_id and link.payload["status"] == "executed"
    comp_intent = [e for e in run if e.kind == "action.intent"][1]
    assert comp_intent.payload["action"]["action_type"] == "test.release"
    assert open_tasks(rt.journal) == []
    # the recorded outcome, replayed, says the same
    again = rt.submit(_p("p", "test.reserve"))
    assert again.replayed and any("compensated" in r for r in again.reasons)
    assert len(released) == 1


def test_compensation_that_fails_escalates_and_never_compensates_itself(rt: Runtime) -> None:
    released = _compensable(rt, release_verifies=False)
    out = rt.submit(_p("p", "test.reserve"))
    assert out.status is OutcomeStatus.VERIFICATION_FAILED
    assert len(released) == 1
    assert [t.code for t in open_tasks(rt.journal)] == ["verification_failed",
                                                         "compensation_failed"]
    assert show_run(rt.journal, out.run_id)[0].status == "escalated"


def test_compensation_is_governed_a_denied_one_escalates(rt: Runtime) -> None:
    # the agent holds no permission for `other.release` (only `test.*`): gate 1 denies it
    released = _compensable(rt, compensation="other.release")
    out = rt.submit(_p("p", "test.reserve"))
    assert released == []
    assert any("ended `denied`" in r for r in out.reasons)
    assert [t.code for t in open_tasks(rt.journal)] == ["compensation_failed"]


def test_a_denied_compensation_escalates_past_the_agents_refusals(rt: Runtime) -> None:
    """``refusals_per_agent_per_hour`` (``tests/security/test_204``) refuses an agent's
    refused proposals past it, unjournaled; the runtime's own compensation is not refused
    for it: denied, it still ends in its escalation (counted in the agent's refusals)."""
    rt.configure(rt.config.model_copy(update={"input_limits": rt.config.input_limits
                                              .model_copy(update={
                                                  "refusals_per_agent_per_hour": 0})}))
    released = _compensable(rt, compensation="other.release")
    out = rt.submit(_p("p", "test.reserve"))
    assert released == []
    assert any("ended `denied`" in r for r in out.reasons)
    assert [t.code for t in open_tasks(rt.journal)] == ["compensation_failed"]


def test_no_compensation_declared_escalates(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "demo.ledger.credit_unreliable",
                             {"account": "a", "amount": 3}))
    assert out.status is OutcomeStatus.VERIFICATION_FAILED
    assert [t.code for t in open_tasks(rt.journal)] == ["verification_failed"]
    assert show_run(rt.journal, out.run_id)[0].status == "escalated"
    assert ledger_entries(rt.home.root) == {}


def test_inconclusive_never_commits_and_is_not_compensated(rt: Runtime) -> None:
    released = _compensable(rt)
    rt.register_verifier("t.raises", lambda req: (_ for _ in ()).throw(RuntimeError("down")))
    rt.register_tool(_tool("test.reserve2", cls=SideEffectClass.COMPENSABLE,
                           verifier="t.raises", compensation="test.release"),
                     lambda call: EchoOut())
    out = rt.submit(_p("p", "test.reserve2"))
    assert out.status is OutcomeStatus.INCONCLUSIVE
    assert out.transition is not None and out.transition.committed_at is None
    assert "transition.committed" not in _kinds(rt)
    assert released == []
    assert [t.code for t in open_tasks(rt.journal)] == ["inconclusive"]
