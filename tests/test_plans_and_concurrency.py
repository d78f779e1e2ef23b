"""Plans with abort policies, and one idempotency key under concurrent submission."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from cradle_kg import AbortPolicy, OutcomeStatus, Plan, PlanStep, Proposal, Runtime
from cradle_kg.demo.scenario import ledger_entries
from cradle_kg.errors import InputError

from .conftest import proposal
from .racers import ForkedPython

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def _plan(policy: AbortPolicy) -> Plan:
    steps = [
        PlanStep(proposal=Proposal.model_validate(
            proposal("s1", "demo.ledger.credit", {"account": "a", "amount": 1}))),
        PlanStep(proposal=Proposal.model_validate(
            proposal("s2", "demo.ledger.credit", {"account": "a", "amount": 5000})),
            depends_on=("s1",)),
        PlanStep(proposal=Proposal.model_validate(
            proposal("s3", "demo.ledger.credit", {"account": "a", "amount": 2})),
            depends_on=("s2",)),
        PlanStep(proposal=Proposal.model_validate(
            proposal("s4", "demo.ledger.credit", {"account": "b", "amount": 3})),
            depends_on=("s1",)),
    ]
    return Plan(id=f"plan-{policy}", steps=tuple(steps), abort_policy=policy)


def test_abort_remaining(rt: Runtime) -> None:
    out = rt.run_plan(_plan(AbortPolicy.ABORT_REMAINING))
    assert out.outcomes["s1"].status is OutcomeStatus.EXECUTED
    assert out.outcomes["s2"].status is OutcomeStatus.DENIED
    assert set(out.skipped) == {"s3", "s4"}
    assert out.status == "incomplete"


def test_skip_dependents(rt: Runtime) -> None:
    out = rt.run_plan(_plan(AbortPolicy.SKIP_DEPENDENTS))
    assert set(out.skipped) == {"s3"}
    assert out.outcomes["s4"].status is OutcomeStatus.EXECUTED


def test_plan_cycle_is_refused(rt: Runtime) -> None:
    p1 = Proposal.model_validate(proposal("a", "demo.ledger.credit", {"account": "a",
                                                                       "amount": 1}))
    p2 = Proposal.model_validate(proposal("b", "demo.ledger.credit", {"account": "a",
                                                                       "amount": 1}))
    plan = Plan(id="cyc", steps=(PlanStep(proposal=p1, depends_on=("b",)),
                                 PlanStep(proposal=p2, depends_on=("a",))))
    with pytest.raises(InputError, match="cycle"):
        rt.run_plan(plan)


def test_fifty_threads_one_key_one_effect(rt: Runtime) -> None:
    same = proposal("p", "demo.ledger.credit", {"account": "a", "amount": 9})
    results: list[OutcomeStatus] = []
    barrier = threading.Barrier(50)

    def go() -> None:
        barrier.wait()
        results.append(rt.submit(same).status)

    threads = [threading.Thread(target=go) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 50
    assert set(results) <= {OutcomeStatus.EXECUTED, OutcomeStatus.IN_PROGRESS}
    assert list(ledger_entries(rt.home.root).values()) == [1]
    intents = [e for e in rt.journal.events() if e.kind == "action.intent"]
    assert len(intents) == 1
    assert rt.journal.verify().intact


_WORKER = """
import json, sys
from cradle_kg import Runtime

rt = Runtime(sys.argv[1])
out = [rt.submit(json.loads(sys.argv[2])).status.value for _ in range(5)]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_four_processes_one_key_one_effect(home: Path) -> None:
    same = json.dumps(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 9}))
    # four processes of their own, forked from the fork server (no interpreter start each)
    procs = [ForkedPython(_WORKER, [str(home), same], env=os.environ, cwd=os.getcwd())
             for _ in range(4)]
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert {s for o in outs for s in o} <= {"executed", "in_progress"}
    assert list(ledger_entries(home).values()) == [1]
    with Runtime(home) as rt:
        assert len([e for e in rt.journal.events() if e.kind == "action.intent"]) == 1
        assert rt.journal.verify().intact
