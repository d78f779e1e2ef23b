"""A person's revoke could be held off by an agent asking for the same action elsewhere.

Finding (the twentieth round's review): a revoke was written ``if_last`` over the newest
event about the action's digest in *any* run, and read again at most five times when one
landed between its read and its append (``append_unmoved``) — then refused: "other events
about its action keep arriving first; revoke again". Every run's request for the same
action is such an event. An agent holding a used reusable approval in one run, asking for
the same action in other runs (each ask one ``approval.requested`` about the digest),
made the revoke lose each of its reads: measured with three processes asking, about half
of a revoke's reads lost their append, and here, an ask landing inside each read, the
revoke gave up every time while the approval kept authorizing the action in its run.

Now a revoke is written once by a key of its own (``approval-revoke:<id>``, UNIQUE in the
journal), not over the digest's newest event: what can change it is only another revoke
of the same approval (the key) or a use (its :class:`~cradle_kg.storage.ApprovalGuard`,
as before), never another run's request, view or decision.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus

from .mcp_http import two_agent_home
from .test_236_pending_key_asks_once import _close
from .test_304_revoke_an_approval import revoke
from .test_316_used_reusable_approval_revoked import asked_anew, used_reusable
from .test_317_used_reusable_revoke_races import _order

pytestmark = pytest.mark.usefixtures("journal_backend")


def _asking_in_every_read(rt: Runtime) -> tuple[list[int], Any]:
    """From now on, each time a revoke checks its revoker's scope (after its read, before
    its append), the agent asks for the same action in a new run of its own first."""
    real = rt.approvals.approvers
    asked: list[int] = []

    def approvers() -> Any:
        if not getattr(approvers, "busy", False):
            approvers.busy = True  # type: ignore[attr-defined]
            try:
                n = len(asked)
                out = rt.submit(_close(f"x{n}", key=f"close-x{n}", run=f"run:other-{n}"))
                assert str(out.status) == "awaiting_approval", out
                asked.append(n)
            finally:
                approvers.busy = False  # type: ignore[attr-defined]
        return real()

    rt.approvals.approvers = approvers
    return asked, real


@pytest.mark.parametrize("uses", [2, 0], ids=["used", "unused"])
def test_a_revoke_lands_while_other_runs_ask_for_the_action(tmp_path: Path, uses: int
                                                           ) -> None:
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        if uses:
            approval = used_reusable(rt, uses=uses)
        else:
            first = rt.submit(_close("p0", key="close-k0"))
            assert first.approval is not None
            approval, _ = rt.decide_approval(
                first.approval.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                status=ApprovalStatus.APPROVED, once=False, resume=False)
        asked, real = _asking_in_every_read(rt)
        done = revoke(rt, approval.id)  # before: JournalError "revoke again", 5 asks
        assert done.status is ApprovalStatus.REVOKED
        intents, [written] = _order(rt, approval.id)
        other = [e.seq for e in rt.journal.events() if e.kind == "approval.requested"
                 and e.run_id.startswith("run:other-")]
        assert asked and len(other) == len(asked) and max(other) < written.seq  # in between
        assert len(intents) == uses and (written.payload.get("used") is True) == bool(uses)
        rt.approvals.approvers = real  # the agent stops asking elsewhere
        asked_anew(rt, approval)
        # still once: a second revoke reads it revoked, refused, nothing more written
        with pytest.raises(Exception, match="revoked"):
            revoke(rt, approval.id)
        assert len(_order(rt, approval.id)[1]) == 1
        assert rt.journal.verify(semantics=True).intact

