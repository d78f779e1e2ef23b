"""A proposal asking again after a revoke could be given its revoked approval's id.

Finding (noticed while building ``approvals revoke``, ``test_304``): an approval's id is
derived from the gate-1 decision that asks for it, and that decision's id from the run,
the proposal, its attempt and the time. A revoke writes no outcome for the proposal (a
person asked anew is the safe default), so the agent submits the same proposal again;
read at the same clock time as the first request (a fixed clock, a coarse one), it made
the same decision id and the same approval id. ``approval_ids`` keeps an id's first
request: the new request was hidden behind the revoked approval — in no inbox, decided
by nobody — and the agent's call waited on an approval that reads ``revoked``.

Now a new approval's id is never one asked for already (one probe of ``approval_ids``
when a person is asked): the proposal's new request is an approval of its own, in the
inbox, and approving it runs the action.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus

from .mcp_http import two_agent_home
from .test_236_pending_key_asks_once import _close
from .test_304_revoke_an_approval import approved, revoke

pytestmark = pytest.mark.usefixtures("journal_backend")

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def test_asked_again_at_the_same_instant(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    with Runtime(home, graph_sync=False, clock=lambda: NOW) as rt:
        first = approved(rt)
        revoke(rt, first.id)
        again = rt.submit(_close("p1"))
        assert str(again.status) == "awaiting_approval", again
        assert again.approval is not None
        assert again.approval.id != first.id  # before: the revoked approval's id
        (listed,), total = rt.approvals.pending_page(limit=10)
        assert total == 1 and listed[0].approval.id == again.approval.id  # before: 0
        _, ran = rt.decide_approval(again.approval.id, approver_id=APPROVER,
                                    token=DEMO_TOKENS[APPROVER],
                                    status=ApprovalStatus.APPROVED)
        assert ran is not None and str(ran.status) == "executed", ran
        assert rt.approvals.get(first.id).approval.status is ApprovalStatus.REVOKED
        assert rt.journal.verify().intact
