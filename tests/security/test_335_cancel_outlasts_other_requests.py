"""A person's cancel of a workflow run could be held off by its agent asking elsewhere.

Finding (beside ``test_333``): ``workflow cancel`` rejects the run's approvals no person
decided yet, in the append that ends the run, and those rejections were written
``if_last`` over each approval's digest in *any* run, read again at most three times —
then refused: "its approvals kept being decided while it was cancelled; cancel again".
Every run's request for the same action moves that digest: the workflow's agent asking
for the run's action in other runs kept a person from ending the run.

Now each rejection claims its approval's decision key (``approval-decision:<id>``, as a
person's decision does): decided once, held back by nothing else. What the ``if_last``
also did — a request of the same action written into the run between the cancel's read
and its append was read again and rejected — is kept, and for any action: after the
cancel lands, the run's approvals still waiting are read once more and rejected (none
lands in the run after its end).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.records import ApprovalStatus

from .test_236_pending_key_asks_once import _close
from .test_297_cancelled_run_approved_action import RUN, _cancel, waiting_close
from .test_330_revoke_outlasts_other_requests import _asking_in_every_read

pytestmark = pytest.mark.usefixtures("journal_backend")


def _status(rt: Runtime, approval_id: str) -> ApprovalStatus:
    return rt.approvals.get(approval_id).approval.status


def test_a_cancel_lands_while_other_runs_ask_for_the_run_s_action(ledger_home: Path) -> None:
    """Each time the cancel checks its canceller (after its read, before its append), the
    agent asks for the run's action in a new run of its own first. Before: JournalError
    "cancel again" after three reads, the run left waiting."""
    with Runtime(ledger_home, graph_sync=False) as rt:
        approval = waiting_close(rt)
        asked, real = _asking_in_every_read(rt)
        try:
            done = _cancel(rt)
        finally:
            rt.approvals.approvers = real
        assert done["status"] == "cancelled" and done["rejected_approvals"] == [approval.id]
        assert asked  # the action was asked for elsewhere meanwhile
        assert _status(rt, approval.id) is ApprovalStatus.REJECTED
        assert rt.journal.verify(semantics=True).intact


@pytest.mark.parametrize("account", ["acct-9", "acct-8"], ids=["same", "other"])
def test_a_request_in_the_run_between_the_read_and_the_end_is_rejected(
        ledger_home: Path, account: str) -> None:
    """Deterministic: the run's agent asks for an action in the run itself while the
    cancel checks its canceller on the approval it read — the run's own action (``same``)
    or another one (``other``). Either approval is rejected by the cancel; nothing of the
    run waits. Before, ``other`` was left waiting in the ended run."""
    with Runtime(ledger_home, graph_sync=False) as rt:
        approval = waiting_close(rt)
        real = rt.approvals.approvers
        late: list[Any] = []
        calls: list[int] = []

        def approvers() -> Any:
            calls.append(1)
            if len(calls) == 2:  # the first is the cancel's token check, before its read
                late.append(None)
                out = rt.submit(_close("p-late", account=account, key="close-late",
                                       run=RUN))
                assert out.approval is not None, out
                late[0] = out.approval.id
            return real()

        rt.approvals.approvers = approvers
        try:
            done = _cancel(rt)
        finally:
            rt.approvals.approvers = real
        assert late[0] != approval.id
        assert sorted(done["rejected_approvals"]) == sorted([approval.id, late[0]])
        assert _status(rt, late[0]) is ApprovalStatus.REJECTED
        assert rt.approvals.pending_page(run_id=RUN)[1] == 0
        assert rt.journal.verify(semantics=True).intact
