"""A revoke's ``"used"`` was taken at its word by the graph, and checked by nothing.

Finding (the twentieth round's review): the graph keeps ``cradle:Approved`` for a
reusable approval whose revoke says ``"used": true`` (``test_318``: what ran under it
stays authorized), and projects ``cradle:Revoked`` otherwise. The runtime writes ``used``
exactly when an intent named the approval before the revoke, but ``audit verify
--semantics`` did not check it: a journal re-chained by someone (or written by a bug)
whose revoke of an approval never used says ``"used": true`` read intact, and its graph
said the approval stood approved where the runtime reads it revoked — an auditor asking
the graph which approvals were taken back did not find it. The other way, a used
approval's revoke saying nothing made the actions that ran under it read unapproved
(rule 2), with nothing saying why. No action was authorized by either (rule 2 still
wants an intent before the revoke), but the record said two things.

Now ``audit verify --semantics`` checks it (invariant ``revoke-used``): the revoke is
named, with what it says and what its run holds, on both journals.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus
from cradle_kg.storage import NewEvent

from .mcp_http import two_agent_home
from .test_236_pending_key_asks_once import _close
from .test_304_revoke_an_approval import revoke
from .test_316_used_reusable_approval_revoked import used_reusable
from .test_317_used_reusable_revoke_races import _order

pytestmark = pytest.mark.usefixtures("journal_backend")


def _forged_revoke(rt: Runtime, approval_id: str, *, used: bool) -> int:
    """A revoke of ``approval_id`` appended as the journal's owner could (re-chained, no
    guard), saying ``used`` as asked: its seq."""
    st = rt.approvals.get(approval_id)
    a = st.approval
    [written] = rt.journal.append([NewEvent(
        run_id=a.run_id, kind="approval.decided", subject="approval:" + a.action_digest,
        actor=APPROVER, at=rt.context.clock(),
        payload={"approval_id": a.id, "status": "revoked", "approver_id": APPROVER,
                 "reason": "forged", "approved_by": a.approver_id,
                 "decision_id": a.decision_id, **({"used": True} if used else {})})])
    return written.seq


def test_a_revoke_saying_used_of_an_approval_never_used(tmp_path: Path) -> None:
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        ran = used_reusable(rt, uses=2)
        revoke(rt, ran.id)  # a real one: used, and says so
        assert rt.journal.verify(semantics=True).intact
        first = rt.submit(_close("q0", account="acct-8", key="close-q0"))
        assert first.approval is not None
        rt.decide_approval(first.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                           once=False, resume=False)
        assert _order(rt, first.approval.id)[0] == []  # never used
        seq = _forged_revoke(rt, first.approval.id, used=True)
        report = rt.journal.verify(semantics=True)
        assert not report.intact and report.invariant == "revoke-used", report  # before: intact
        assert report.broken_seq == seq
        assert first.approval.id in str(report.reason) and "says it was used" in str(
            report.reason)


def test_a_used_approvals_revoke_saying_nothing(tmp_path: Path) -> None:
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        ran = used_reusable(rt, uses=1)
        seq = _forged_revoke(rt, ran.id, used=False)
        report = rt.journal.verify(semantics=True)
        assert not report.intact and report.invariant == "revoke-used", report  # before: intact
        assert report.broken_seq == seq and "an intent of its run named it" in str(
            report.reason)
