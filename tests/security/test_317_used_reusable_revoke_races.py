"""A revoke of a reusable approval racing its next use: never an intent after the revoke.

The revoke of a used reusable approval is written whatever its uses (``test_316``), so
the race is decided by the use's own guard, under the journal writer's lock: either the
use lands first and runs (then the revoke, and nothing more runs), or the revoke lands
first and nothing more runs (the proposal asks a person anew). A reusable approval the
revoke read unused is revoked guarded, as before (``test_305``); a use landing between
that read and the revoke's append refuses it under the lock, and the revoke — read
again, found used — is written after it, saying so.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus
from tests.racers import at_once

from .mcp_http import two_agent_home
from .test_236_pending_key_asks_once import _close
from .test_304_revoke_an_approval import WHY, revoke

pytestmark = pytest.mark.usefixtures("journal_backend")


def _order(rt: Runtime, approval_id: str) -> tuple[list[int], list[Any]]:
    """The seqs of the intents naming the approval, and its revokes (events)."""
    events = list(rt.journal.events())
    intents = [e.seq for e in events if e.kind == "action.intent"
               and e.payload.get("approval_id") == approval_id]
    revokes = [e for e in events if e.kind == "approval.decided"
               and e.payload.get("status") == "revoked"
               and e.payload.get("approval_id") == approval_id]
    return intents, revokes


def _reusable(rt: Runtime, r: int, *, used: bool) -> str:
    """A reusable approval of its own account (no expiry), run once at once if ``used``."""
    first = rt.submit(_close(f"p{r}", account=f"acct-r{r}", key=f"close-r{r}"))
    assert first.approval is not None
    _, out = rt.decide_approval(first.approval.id, approver_id=APPROVER,
                                token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                                once=False, resume=used)
    assert (out is not None and str(out.status) == "executed") if used else out is None
    return first.approval.id


@pytest.mark.parametrize("used", [True, False], ids=["used", "unused"])
def test_the_next_use_racing_the_revoke(tmp_path: Path, used: bool) -> None:
    """The agent proposes the action again (a new key) while a person revokes its reusable
    approval, in threads of one process (the JSON API's), rounds staggered. The revoke is
    always written; the use runs only when its intent lands before it; the revoke says
    ``used`` exactly when an intent came before it. Before, a used one's revoke was refused
    ``already_used`` and every later proposal ran."""
    stagger = (0.0, 0.0, 0.001, 0.002, 0.004, 0.008)
    wins = {"use": 0, "revoke": 0}
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        for r in range(18):
            approval_id = _reusable(rt, r, used=used)

            def use(r: int = r) -> Any:
                return rt.submit(_close(f"q{r}", account=f"acct-r{r}", key=f"close-q{r}"))

            def revoke_later(approval_id: str = approval_id,
                             delay: float = stagger[r % len(stagger)]) -> Any:
                time.sleep(delay)
                return rt.revoke_approval(approval_id, approver_id=APPROVER,
                                          token=DEMO_TOKENS[APPROVER], reason=WHY)

            out, revoked = at_once(use, revoke_later)
            assert not isinstance(revoked, Exception), (r, revoked)  # before: already_used
            intents, [written] = _order(rt, approval_id)
            assert all(seq < written.seq for seq in intents), (r, intents, written.seq)
            assert (written.payload.get("used") is True) == bool(intents), (r, written)
            ran = len(intents) == (2 if used else 1)
            assert str(out.status) == ("executed" if ran else "awaiting_approval"), (r, out)
            wins["use" if ran else "revoke"] += 1
            # and nothing more runs under it
            later = rt.submit(_close(f"z{r}", account=f"acct-r{r}", key=f"close-z{r}"))
            assert str(later.status) == "awaiting_approval", (r, later)
        assert rt.journal.verify(semantics=True).intact
    print(wins)


def test_a_use_landing_between_the_revokes_read_and_its_append(tmp_path: Path) -> None:
    """Deterministic: the revoke reads the reusable approval unused (its guarded path),
    then — while it checks the revoker's scope, after its read — the agent's use lands.
    The revoke's append is refused under the writer's lock (its guard), and the revoke is
    read again: used, written after the use, saying so. The use ran; nothing after it
    does."""
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        approval_id = _reusable(rt, 0, used=False)
        real = rt.approvals.approvers
        calls: list[int] = []

        def approvers() -> Any:
            calls.append(1)
            if len(calls) == 2:  # the revoke's scope check: after its read of the uses
                assert str(rt.submit(_close("q0", account="acct-r0",
                                            key="close-q0")).status) == "executed"
            return real()

        rt.approvals.approvers = approvers
        try:
            done = revoke(rt, approval_id)
        finally:
            rt.approvals.approvers = real
        assert len(calls) > 2  # read again after the refused append
        assert done.status is ApprovalStatus.REVOKED
        intents, [written] = _order(rt, approval_id)
        assert len(intents) == 1 and intents[0] < written.seq
        assert written.payload.get("used") is True
        again = rt.submit(_close("q1", account="acct-r0", key="close-q1"))
        assert str(again.status) == "awaiting_approval", again
        assert rt.approvals.get(approval_id).revoked.uses == 1  # type: ignore[union-attr]
        assert rt.journal.verify(semantics=True).intact
