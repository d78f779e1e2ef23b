"""What a submission reads does not grow with the approvals its run asked for the action.

Finding: ``test_63`` bounded a submission's approval reads to its own run, but within the
run they still folded *every* approval the run ever asked for the action. Gate 1's
``ApprovalBook.usable`` (asked twice a submission: at the gate and before the call) and
``ApprovalFlow.request`` (does this proposal wait already?) read and decoded every event of
the digest in the run. An agent proposing one irreversible action again and again in one
run — an MCP session is one run; a proposal that waits for a person runs nothing and no
limit counts it — asks for one approval each time, so the N-th submission decoded 2 rows
per earlier one (18 rows at the 10th, 120 at the 61st, 240 at the 121st: quadratic), and
a legitimate use of an approval in that run waited behind them.

Now ``usable`` folds the digest's *decisions* in the run (``approval.decided`` /
``approval.consumed``, read with ``events_for_subject(kinds=)``: the requests are skipped
in the index walk, not decoded) and the request each decision names (one probe of
``approval_ids``): as many rows as people made decisions. ``request`` finds the approval
the proposal already waits on from its last outcome in the run (one probe of the outcome
index) and those decisions (a proposal whose last outcome is no longer that wait asks
anew). 0 rows a submission here, whatever the approvals asked.
Counted as the event rows the journal decodes (not time: the machine is shared), on both
journals.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus, OutcomeStatus

from .inputcli import fresh_home
from .reads import rows_read

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def _close(pid: str, run: str = "run:one", step: int = 0) -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": AGENT, "step": step,
            "action": {"action_type": "demo.ledger.close_account", "target": "ledger:acct-2",
                       "arguments": {"account": "acct-2"}}}


def _rows(decoded: Callable[[], int], rt: Runtime, p: dict[str, Any]) -> tuple[int, Any]:
    return rows_read(decoded, lambda: rt.submit(p))


def test_one_action_proposed_again_and_again_in_one_run(
        tmp_path: Path, decoded: Callable[[], int]) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        rows: list[int] = []
        for i in range(61):
            n, outcome = _rows(decoded, rt, _close(f"p{i}"))
            assert outcome.status is OutcomeStatus.AWAITING_APPROVAL
            rows.append(n)
        # before: 2 rows per approval the run asked for the action (18 at the 10th
        # submission, 120 at the 61st); now none
        assert max(rows[50:]) <= max(rows[:10]) <= 4, (rows[:10], rows[50:])
        assert len({o.approval.id for o in (rt.submit(_close("p3")), rt.submit(_close("p4")))
                    if o.approval}) == 2

        # the same proposal again waits on the approval it asked for, not a new one
        first = rt.submit(_close("p7"))
        again = rt.submit(_close("p7", step=0))
        assert first.approval is not None and again.approval is not None
        assert again.approval.id == first.approval.id

        # decided: the approved one runs once, its run's others still wait
        _, done = rt.decide_approval(first.approval.id, approver_id=APPROVER,
                                     token=DEMO_TOKENS[APPROVER],
                                     status=ApprovalStatus.APPROVED)
        assert done is not None and done.status is OutcomeStatus.EXECUTED
        n, later = _rows(decoded, rt, _close("p-late", step=1))
        assert later.status is OutcomeStatus.AWAITING_APPROVAL, later  # approve-once used
        # the one decision (and its use) are read, with the request it names: a few rows
        assert n <= 8, n
        rejected = rt.submit(_close("q9", step=2))
        assert rejected.approval is not None
        rt.decide_approval(rejected.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.REJECTED,
                           reason="no")
        # rejected: the proposal again is answered with the rejection, nothing new asked
        retry = rt.submit(_close("q9", step=2))
        assert retry.replayed and retry.status is OutcomeStatus.DENIED
        assert rt.journal.verify().intact


def test_a_reusable_approval_is_still_found_among_many_requests(
        tmp_path: Path, decoded: Callable[[], int]) -> None:
    """An approval within a scope authorizes the same action again in its run: found
    from the decisions, however many other approvals the run asked for it."""
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        for i in range(20):
            rt.submit(_close(f"p{i}"))
        waiting = rt.submit(_close("p-scoped"))
        assert waiting.approval is not None
        scope = waiting.approval.scope or "ledger"
        rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                           once=False, scope=scope, resume=False)
        used = rt.submit(_close("p-next", step=5))
        assert used.status is OutcomeStatus.EXECUTED, used
        # the used approval's decision and request (before: 22 rows, every request)
        before = decoded()
        assert rt.approvals.usable(waiting.approval.action_digest, rt.context.clock(), AGENT,
                                   run_id="run:one") is not None
        assert decoded() - before <= 3
