"""A read-only call is journaled in one transaction, intent to outcome; a write keeps its
intent durable before the call, and its observation unflushed until the outcome's commit.

Why this is safe for a read (:func:`cradle_kg.loop.execution.one_transaction`): a read has
no effect, so a crash before its single commit leaves nothing for recovery to reconcile —
nothing was journaled and nothing was answered; the agent's next submission reads again.
These tests kill a real child process (SIGKILL) at every crash point of a read, and check
that the restart finds nothing dangling, loses no acknowledged event, and that the
submission after it executes once. They run on both journals.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Runtime, ToolCall, ToolSpec
from cradle_kg.crashpoints import CRASH_POINTS
from cradle_kg.loop.execution import one_transaction
from cradle_kg.records import AuditEvent, IdempotencyClass, SideEffectClass
from cradle_kg.storage import NewEvent, open_home_journal

from .conftest import Echo, EchoOut, make_config, proposal, register_test_tools
from .test_recovery import assert_no_lost_events, run_child

pytestmark = pytest.mark.usefixtures("journal_backend")

BALANCE = proposal("p-read", "demo.ledger.balance", {"account": "acct-1"})
CREDIT = proposal("p-write", "demo.ledger.credit", {"account": "acct-1", "amount": 5})


class Batches:
    """An append listener: the events of each transaction, in order."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, events: Sequence[AuditEvent]) -> None:
        self.batches.append([e.kind for e in events])


def test_a_read_is_one_transaction_from_proposal_to_outcome(rt: Runtime) -> None:
    rt.submit(proposal("p-first", "demo.ledger.balance", {"account": "acct-1"}))
    seen = Batches()  # after the run's first call (its policy set is journaled once)
    rt.listeners.append(seen)
    out = rt.submit(BALANCE)
    assert out.status is OutcomeStatus.EXECUTED
    assert len(seen.batches) == 1
    kinds = seen.batches[0]
    assert kinds[0] == "proposal.received" and kinds[-1] == "run.outcome"
    for kind in ("action.intent", "action.observed", "verification.recorded",
                 "transition.committed"):
        assert kinds.count(kind) == 1
    assert kinds.index("action.intent") < kinds.index("action.observed")
    assert rt.journal.dangling_intents() == []
    assert rt.journal.verify().intact


def test_a_write_commits_its_intent_before_the_call(rt: Runtime) -> None:
    rt.submit(proposal("p-first", "demo.ledger.balance", {"account": "acct-1"}))
    seen = Batches()
    rt.listeners.append(seen)
    out = rt.submit(CREDIT)
    assert out.status is OutcomeStatus.EXECUTED
    # intent (with the proposal and decision) | observation | verification + outcome
    assert seen.batches[0][-1] == "action.intent"
    assert seen.batches[1] == ["action.observed"]
    assert seen.batches[2][-1] == "run.outcome"
    spec = rt.tools.get("demo.ledger.credit")
    assert spec.side_effect_class is not SideEffectClass.READ_ONLY
    assert not one_transaction(spec)
    assert one_transaction(rt.tools.get("demo.ledger.balance"))


def _probes(rt: Runtime, read: Any, write: Any) -> None:
    """A read-only tool and a write, whose bodies the test chooses."""
    common: dict[str, Any] = dict(version="1", input_model=Echo, output_model=EchoOut,
                                  idempotency=IdempotencyClass.NATURAL, target_from="test:*")
    rt.register_tool(ToolSpec(id="test.read_probe", side_effect_class=SideEffectClass.READ_ONLY,
                              **common), read)
    rt.register_tool(ToolSpec(id="test.write_probe", verifier="test.ok",
                              side_effect_class=SideEffectClass.REVERSIBLE,
                              blast_radius=("test:*",), **common), write)


READ_PROBE = proposal("p-probe-read", "test.read_probe", {"value": "r"}, target="test:r",
                      agent="agent:tester")
WRITE_PROBE = proposal("p-probe-write", "test.write_probe", {"value": "w"}, target="test:w",
                       agent="agent:tester")


def test_the_intent_of_a_write_is_in_the_journal_when_the_tool_runs(home: Path) -> None:
    """Seen from inside the tool, through another handle on the journal: the intent is
    committed before the effect; a read's is not written before its one commit."""
    seen: dict[str, bool] = {}

    def probe(name: str) -> Any:
        def body(call: ToolCall) -> EchoOut:
            with open_home_journal(home) as other:
                seen[name] = other.intent_for_key(call.idempotency_key) is not None
            return EchoOut(value=name)
        return body

    with Runtime(home, config=make_config()) as rt:
        register_test_tools(rt)
        _probes(rt, probe("read"), probe("write"))
        assert rt.submit(WRITE_PROBE).status is OutcomeStatus.EXECUTED
        assert rt.submit(READ_PROBE).status is OutcomeStatus.EXECUTED
    assert seen == {"write": True, "read": False}


def test_the_commit_check_sees_the_held_events_of_a_read(rt: Runtime) -> None:
    checked: list[list[str]] = []

    def hook(run_id: str, events: Sequence[NewEvent]) -> Sequence[str]:
        checked.append([e.kind for e in events])
        return []

    rt.commit_hooks.append(hook)
    assert rt.submit(BALANCE).status is OutcomeStatus.EXECUTED
    assert len(checked) == 1
    assert {"proposal.received", "action.intent", "action.observed",
            "verification.recorded", "transition.committed"} <= set(checked[0])


def test_a_read_that_fails_the_commit_check_is_journaled_aborted(rt: Runtime) -> None:
    rt.commit_hooks.append(lambda run_id, events: ["rule x: refused for the test"])
    out = rt.submit(BALANCE)
    assert out.status is OutcomeStatus.FAILED
    kinds = [e.kind for e in rt.journal.events()]
    assert "transition.aborted" in kinds and "transition.committed" not in kinds
    assert rt.journal.dangling_intents() == []


def test_a_read_that_loses_its_claim_at_commit_answers_from_the_record(home: Path) -> None:
    """Another runtime submits the same proposal while this one reads: the first commit
    wins; the loser drops what it read and answers with the winner's recorded outcome."""
    raced: list[Any] = []

    def racing(call: ToolCall) -> EchoOut:
        if not raced:  # the other submission, complete, while this read is in the tool
            with Runtime(home, config=make_config()) as other:
                register_test_tools(other)
                _probes(other, lambda c: EchoOut(value="theirs"), lambda c: EchoOut())
                raced.append(other.submit(READ_PROBE))
        return EchoOut(value="ours")

    with Runtime(home, config=make_config()) as rt:
        register_test_tools(rt)
        _probes(rt, racing, lambda c: EchoOut())
        out = rt.submit(READ_PROBE)
        assert raced[0].status is OutcomeStatus.EXECUTED
        assert out.status is OutcomeStatus.EXECUTED
        assert out.observation is not None
        assert out.observation.output["value"] == "theirs"  # the record, not what we read
        kinds = [e.kind for e in rt.journal.events()]
        assert kinds.count("action.intent") == 1
        assert kinds.count("proposal.received") == 1
        assert rt.journal.dangling_intents() == []
        assert rt.journal.verify().intact


def test_a_read_that_raises_inside_leaves_nothing_written(rt: Runtime) -> None:
    rt.submit(proposal("p-first", "demo.ledger.balance", {"account": "acct-1"}))
    head = rt.journal.head()

    def broken_hook(run_id: str, events: Sequence[NewEvent]) -> Sequence[str]:
        raise KeyboardInterrupt  # not an Exception: the check cannot swallow it

    rt.commit_hooks.append(broken_hook)
    with pytest.raises(KeyboardInterrupt):
        rt.submit(BALANCE)
    assert rt.journal.head() == head  # all or none: none
    rt.commit_hooks.remove(broken_hook)
    assert rt.submit(BALANCE).status is OutcomeStatus.EXECUTED
    assert rt.journal.dangling_intents() == []


#: the loop's crash points a read passes (``during_call`` is inside effectful tools: "the
#: effect is applied, the tool has not returned" — a read has no effect to be during)
READ_POINTS = [p for p in CRASH_POINTS if p != "during_call"]


@pytest.mark.parametrize("point", READ_POINTS)
def test_sigkill_of_a_read_at_each_point_leaves_nothing_to_recover(home: Path,
                                                                     point: str) -> None:
    # a write first (acknowledged events that must survive), then the read dies at the
    # point's second pass
    done, log = run_child(home, [CREDIT, BALANCE], crash_at=f"{point}:2")
    assert done.returncode == -signal.SIGKILL, done.stderr
    with Runtime(home) as rt:
        report = rt.recovery
        assert report is not None and report.dangling == 0
        assert_no_lost_events(rt, log)
        # nothing of the read was written; the write before it is whole
        subjects = {e.payload.get("proposal", {}).get("id") for e in rt.journal.events()
                    if e.kind == "proposal.received"}
        assert subjects == {"p-write"}
        again = rt.submit(BALANCE)
        assert again.status is OutcomeStatus.EXECUTED and again.replayed is False
        intents = [e for e in rt.journal.events() if e.kind == "action.intent"]
        assert len(intents) == 2
        assert rt.journal.dangling_intents() == []
        assert rt.journal.verify().intact
