"""An expired approval still held its agent's key.

Finding (left by ``test_284``): an approval approved under an agent's idempotency key and
never run keeps other arguments under the key refused (``idempotency_conflict``), read
from the derived ``unrun_approvals``. One approved ``--until`` a time that has passed
authorizes nothing, yet kept the key refused for good: nothing removes its row.

Now the expiry is read when the key is checked: a row whose approval expired (or was
revoked) holds nothing, and other arguments under the key ask for their own approval.
No background job: the row stays until the key's action runs; the check decides from
the approval's decision at read time, and only when a row is found (a call under a key
with no such row does no more work).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus, Outcome

from .mcp_http import two_agent_home
from .test_236_pending_key_asks_once import _close
from .test_284_approved_key_other_arguments import _conflict, _unrun

pytestmark = pytest.mark.usefixtures("journal_backend")


def _approved_for_an_hour(rt: Runtime) -> Outcome:
    """The keyed closure asked for (``p1``) and approved until an hour from now, not run."""
    first = rt.submit(_close("p1"))
    assert first.approval is not None
    rt.decide_approval(first.approval.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                       status=ApprovalStatus.APPROVED, once=False,
                       until=datetime.now(UTC) + timedelta(hours=1), resume=False)
    return first


def test_an_expired_approval_no_longer_holds_its_key(tmp_path: Path) -> None:
    later = [timedelta(0)]
    home = two_agent_home(tmp_path / "home")
    with Runtime(home, graph_sync=False, clock=lambda: datetime.now(UTC) + later[0]) as rt:
        first = _approved_for_an_hour(rt)
        assert _conflict(rt.submit(_close("p2", account="acct-8")))  # while it holds
        later[0] = timedelta(hours=2)  # its --until is past: it authorizes nothing
        other = rt.submit(_close("p3", account="acct-8"))
        assert str(other.status) == "awaiting_approval", other  # before: the conflict
        assert _unrun(rt) == [first.approval.id]  # the row stays; read, not deleted
        # the expired approval's own arguments: not run under it either — asked anew
        same = rt.submit(_close("p4"))
        assert str(same.status) != "executed", same
        assert rt.journal.verify().intact


def test_an_unexpired_approval_still_holds_its_key(tmp_path: Path) -> None:
    """The fail-closed side: an approval approved until later holds the key as before."""
    home = two_agent_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        _approved_for_an_hour(rt)
        assert _conflict(rt.submit(_close("p2", account="acct-8")))
