"""Many workers on one journal: limits and budgets are counted from the journal, not per
process — two runtimes (two connections, two leases) on one journal, on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.config import Limit
from tests.conftest import make_config, proposal

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_a_rate_limit_counts_every_workers_calls(home: Path) -> None:
    cfg = make_config(limits=(Limit(scope="agent", window_seconds=3600, max_calls=3),))
    with Runtime(home, config=cfg) as a, Runtime(home, config=cfg) as b:
        assert a.lease.id != b.lease.id
        done = [w.submit(proposal(f"p{i}", "demo.ledger.credit", {"account": "a", "amount": 1}))
                for i, w in enumerate((a, b, a))]
        assert [o.status for o in done] == [OutcomeStatus.EXECUTED] * 3
        out = b.submit(proposal("p4", "demo.ledger.credit", {"account": "a", "amount": 1}))
    assert out.status is OutcomeStatus.DENIED
    assert out.decision is not None and out.decision.reason_codes == ("rate_limit_agent",)


def test_a_cost_limit_counts_every_workers_calls(home: Path) -> None:
    cfg = make_config(limits=(Limit(scope="task", window_seconds=3600, max_cost=1.5),))
    with Runtime(home, config=cfg) as a, Runtime(home, config=cfg) as b:
        first = a.submit(proposal("p1", "demo.ledger.credit", {"account": "a", "amount": 1},
                                  task_id="t"))
        second = b.submit(proposal("p2", "demo.ledger.credit", {"account": "a", "amount": 2},
                                   task_id="t"))
    assert first.status is OutcomeStatus.EXECUTED
    assert second.decision is not None and second.decision.reason_codes == ("cost_limit_task",)


def test_an_approval_given_to_one_worker_resumes_the_run_on_another(home: Path) -> None:
    from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
    from cradle_kg.records import ApprovalStatus

    with Runtime(home, config=make_config()) as a, Runtime(home, config=make_config()) as b:
        waiting = a.submit(proposal("p", "demo.ledger.close_account", {"account": "acct-9"}))
        assert waiting.status is OutcomeStatus.AWAITING_APPROVAL and waiting.approval
        b.decide_approval(waiting.approval.id, approver_id=APPROVER,
                          token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
        resumed = b.submit(proposal("p", "demo.ledger.close_account", {"account": "acct-9"}))
        assert resumed.status is OutcomeStatus.EXECUTED
        again = a.submit(proposal("p", "demo.ledger.close_account", {"account": "acct-9"}))
        assert again.status is OutcomeStatus.EXECUTED  # answered from the journal, not re-run
        assert len(a.journal.events_of_kind("action.intent")) == 1
