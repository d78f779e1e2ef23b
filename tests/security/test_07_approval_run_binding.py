"""Item 7: pending approvals belong to their run.

The attack: run B asks for the same exact action as run A, which waits for an approval.
Before the fix B was handed A's pending approval id; approving it resumed only A, and B
waited forever with nothing in the inbox. Afterwards every waiting proposal holds an
approval of its own run (and its own proposal), which the inbox lists.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus, OutcomeStatus
from tests.conftest import make_config

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")



@pytest.fixture
def art(home: Path) -> Iterator[Runtime]:
    runtime = Runtime(home, config=make_config())
    yield runtime
    runtime.close()


def close(pid: str, run_id: str, account: str = "acct-9") -> dict[str, Any]:
    return {"id": pid, "task_id": "task-" + pid, "agent_id": AGENT, "run_id": run_id,
            "action": {"action_type": "demo.ledger.close_account", "target": "ledger:" + account,
                       "arguments": {"account": account}}}


def _pending(rt: Runtime) -> list[tuple[str, str, str]]:
    return sorted((s.approval.id, s.approval.run_id, s.approval.proposal_id)
                  for s in rt.approvals.all() if s.approval.status is ApprovalStatus.PENDING)


def test_run_b_gets_its_own_approval_not_run_as(art: Runtime) -> None:
    a = art.submit(close("p-a", "run:A"))
    b = art.submit(close("p-b", "run:B"))
    assert a.status is b.status is OutcomeStatus.AWAITING_APPROVAL
    assert a.approval is not None and b.approval is not None
    assert b.approval.id != a.approval.id
    assert b.approval.run_id == "run:B" and b.approval.proposal_id == "p-b"
    assert len(_pending(art)) == 2
    # approving A's leaves B visibly waiting in the inbox, and approving B's runs B
    art.decide_approval(a.approval.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                        status=ApprovalStatus.APPROVED)
    assert _pending(art) == [(b.approval.id, "run:B", "p-b")]
    _, done = art.decide_approval(b.approval.id, approver_id=APPROVER,
                                  token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
    assert done is not None and done.run_id == "run:B"
    assert done.status is OutcomeStatus.EXECUTED, done.reasons


def test_another_proposal_of_the_same_run_is_not_handed_a_pending_approval(art: Runtime) -> None:
    first = art.submit(close("p-1", "run:A"))
    second = art.submit(close("p-2", "run:A"))
    assert first.approval is not None and second.approval is not None
    assert second.approval.id != first.approval.id
    assert second.approval.proposal_id == "p-2"


def test_the_identical_proposal_waiting_again_keeps_its_approval(art: Runtime) -> None:
    first = art.submit(close("p-1", "run:A"))
    again = art.submit(close("p-1", "run:A"))
    assert first.approval is not None and again.approval is not None
    assert again.approval.id == first.approval.id
    assert len(_pending(art)) == 1


def test_resume_of_run_b_never_uses_run_as_approval(art: Runtime) -> None:
    a = art.submit(close("p-a", "run:A"))
    art.submit(close("p-b", "run:B"))
    assert a.approval is not None
    art.decide_approval(a.approval.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                        status=ApprovalStatus.APPROVED, resume=False)
    assert art.resume("run:B") == []
    again = art.submit(close("p-b", "run:B"))
    assert again.status is OutcomeStatus.AWAITING_APPROVAL
