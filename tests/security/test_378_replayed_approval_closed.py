"""An approval whose key had run already is closed by its resume, and its proposal ends.

Finding (twenty-second review, left open after ``test_368``): an agent asked for the same
keyed action (close ``acct-2`` under its key ``k``) in two of its runs; two approvals
waited for one effect, and an approver approved both. The first run executed; resuming the
second found the key's action had run, and replayed it — ``proposal.received``,
``decision.made``, ``action.replayed`` — but a replay recorded no outcome for that proposal
and consumed nothing. So the second run read as waiting for an approval forever, its
approval stayed approved and unused, and ``cradle-kg runs resume`` replayed it again,
three events, every time it was run.

What must hold: the resume that finds the key's action ran records the proposal's outcome
(the key's recorded one, ``replayed: true``) and closes the approval (an approve-once is
consumed); the run no longer waits; resuming it again writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus, OutcomeStatus
from cradle_kg.runs import RunState, state_and_why
from tests.inprocess import run_cli

from .mcp_http import MALLORY, two_agent_fixtures


def _close(pid: str, run: str) -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": MALLORY,
            "action": {"action_type": "demo.ledger.close_account", "target": "ledger:acct-2",
                       "arguments": {"account": "acct-2"}, "idempotency_key": "k"}}


home, rt = two_agent_fixtures()


def _two_waiting(rt: Runtime, *, once: bool) -> str:
    """Two runs wait for one keyed effect; both approved (neither resumed by the
    decision); the first run resumed, executed. The second approval's id."""
    approvals = []
    for n in (1, 2):
        waiting = rt.submit(_close(f"p{n}", f"run:m-{n}"))
        assert waiting.status is OutcomeStatus.AWAITING_APPROVAL and waiting.approval
        approvals.append(waiting.approval.id)
    for approval in approvals:
        rt.decide_approval(approval, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                           status=ApprovalStatus.APPROVED, once=once, resume=False)
    (done,) = rt.resume("run:m-1")
    assert done.status is OutcomeStatus.EXECUTED and not done.replayed, done
    return approvals[1]


@pytest.mark.parametrize("once", [True, False], ids=["approve-once", "reusable"])
def test_the_second_run_ends_and_a_second_resume_writes_nothing(rt: Runtime, home: Path,
                                                                once: bool) -> None:
    second = _two_waiting(rt, once=once)
    (replayed,) = rt.resume("run:m-2")
    assert replayed.status is OutcomeStatus.EXECUTED and replayed.replayed, replayed
    recorded = rt.journal.latest_outcome("run:m-2", "p2")
    assert recorded is not None
    # before: the proposal's latest outcome was still `awaiting_approval`
    assert recorded.payload["outcome"]["status"] == "executed", recorded.payload
    assert recorded.payload["outcome"]["replayed"] is True
    state, why = state_and_why(rt.journal, "run:m-2")
    assert state is not RunState.WAITING_FOR_PERSON, (state, why)
    if once:  # before: approved, unused
        assert rt.approvals.get(second).approval.consumed
    head = rt.journal.head()
    assert rt.resume("run:m-2") == []  # before: replayed again, three events
    done = run_cli("runs", "resume", "run:m-2", "--home", str(home))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
    rt.refresh()
    assert rt.journal.head() == head
    kinds = [e.kind for e in rt.journal.events(run_id="run:m-2")]
    assert kinds.count("action.replayed") == 1, kinds
    assert kinds.count("action.intent") == 0, kinds  # nothing ran twice
