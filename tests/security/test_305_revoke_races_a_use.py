"""A revoke racing the approval's use is decided under the journal writer's lock.

Either the use wins — the action's intent is written, and the revoke of an approve-once
is refused ``already_used`` (a reusable approval's is written after it, saying it was
used: ``test_316``) — or the revoke wins — nothing runs, and the proposal is decided
again knowing it (a person asked anew). Never an intent under an approval revoked before
it: what the guards exist to prevent. The use's intent is written only while no revoke
of its approval is in the journal (probed under the writer's lock), and the revoke of an
approval it read unused only while no intent names the approval (the same lock).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalUsedError
from cradle_kg.records import ApprovalStatus
from cradle_kg.storage import ApprovalGuard, ApprovalMoved, NewEvent
from tests.racers import at_once

from .mcp_http import AGENT, two_agent_home
from .test_236_pending_key_asks_once import _close
from .test_304_revoke_an_approval import WHY, approved, revoke

pytestmark = pytest.mark.usefixtures("journal_backend")

TOOL = "demo.ledger.close_account"


def _used_and_revoked(rt: Runtime, approval_id: str) -> tuple[bool, bool]:
    events = list(rt.journal.events())
    used = any(e.kind == "action.intent" and e.payload.get("approval_id") == approval_id
               for e in events)
    revoked = any(e.kind == "approval.decided" and e.payload.get("status") == "revoked"
                  and e.payload.get("approval_id") == approval_id for e in events)
    return used, revoked


@pytest.mark.parametrize("how", ["once", "until"])
def test_a_revoke_landing_while_gate_1_weighs_the_use(tmp_path: Path, how: str) -> None:
    """The revoke is written after gate 1 read the approval usable (a validator, as a pack
    registers one, holds gate 1 while it lands): the use's append is refused under the
    writer's lock, and the proposal is decided again — a person is asked anew."""
    decided: dict[str, Any] = {} if how == "once" else {
        "once": False, "until": datetime.now(UTC) + timedelta(hours=1)}
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        approval = approved(rt, **decided)
        landed: list[Any] = []

        def lands(proposal: Any, spec: Any) -> list[Any]:
            if not landed:
                landed.append(revoke(rt, approval.id))
            return []

        rt.register_validator(TOOL, lands, name="revoke-lands")
        out = rt.submit(_close("p1"))
        assert landed, "the validator ran"
        assert str(out.status) == "awaiting_approval", out  # before: executed
        assert out.approval is not None and out.approval.id != approval.id
        assert _used_and_revoked(rt, approval.id) == (False, True)
        assert rt.journal.verify().intact


@pytest.mark.parametrize("how", ["once", "until"])
def test_a_revoke_racing_the_agents_resubmission(tmp_path: Path, how: str) -> None:
    """The agent submits the approved proposal while a person revokes its approval, in
    threads of one process (the JSON API's), rounds staggered: one wins each round. An
    approve-once's use moves its approval (its consumption), a reusable one's does not:
    the revoke's own guard finds its intent — and the reusable one's revoke, read again,
    is written after the use (``test_316``)."""
    decided: dict[str, Any] = {} if how == "once" else {
        "once": False, "until": datetime.now(UTC) + timedelta(hours=1)}
    stagger = (0.0, 0.0, 0.001, 0.002, 0.004, 0.008)
    wins = {"use": 0, "revoke": 0}
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        for r in range(18):
            key, account = f"close-r{r}", f"acct-r{r}"
            first = rt.submit(_close(f"p{r}", account=account, key=key))
            assert first.approval is not None
            rt.decide_approval(first.approval.id, approver_id=APPROVER,
                               token=DEMO_TOKENS[APPROVER],
                               status=ApprovalStatus.APPROVED, resume=False, **decided)

            def use(pid: str = f"p{r}", account: str = account, key: str = key) -> Any:
                return rt.submit(_close(pid, account=account, key=key))

            def revoke_later(approval_id: str = first.approval.id,
                             delay: float = stagger[r % len(stagger)]) -> Any:
                time.sleep(delay)
                return rt.revoke_approval(approval_id, approver_id=APPROVER,
                                          token=DEMO_TOKENS[APPROVER], reason=WHY)

            out, revoked = at_once(use, revoke_later)
            used, journaled = _used_and_revoked(rt, first.approval.id)
            if how == "once":
                assert used != journaled, (r, out, revoked)  # never both, never neither
            else:  # the revoke always lands; a use only before it
                assert journaled and not isinstance(revoked, Exception), (r, revoked)
            if used:
                assert str(out.status) == "executed", (r, out)
                assert isinstance(revoked, ApprovalUsedError) or how != "once", (r, revoked)
                wins["use"] += 1
            else:
                assert str(out.status) == "awaiting_approval", (r, out)
                assert not isinstance(revoked, Exception), (r, revoked)
                wins["revoke"] += 1
        assert rt.journal.verify().intact
    print(wins)


def test_a_revoke_racing_an_approve_and_run(tmp_path: Path) -> None:
    """A reusable approval, approved and run at once by one person (``resume=True``) while
    another revokes it: the revoke reads it pending (refused) or approved; whichever of
    the use and the revoke lands second is refused."""
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        for r in range(12):
            key, account = f"close-a{r}", f"acct-a{r}"
            first = rt.submit(_close(f"a{r}", account=account, key=key))
            assert first.approval is not None

            def approve(approval_id: str = first.approval.id) -> Any:
                return rt.decide_approval(approval_id, approver_id=APPROVER,
                                          token=DEMO_TOKENS[APPROVER],
                                          status=ApprovalStatus.APPROVED, resume=True)

            def revoke_soon(approval_id: str = first.approval.id, delay: float = r * 0.002
                            ) -> Any:
                time.sleep(delay)
                try:
                    return rt.revoke_approval(approval_id, approver_id=APPROVER,
                                              token=DEMO_TOKENS[APPROVER], reason=WHY)
                except Exception as exc:  # refused: read pending, or used — said below
                    return exc

            at_once(approve, revoke_soon)
            used, journaled = _used_and_revoked(rt, first.approval.id)
            assert not (used and journaled), r
        assert rt.journal.verify().intact


def test_the_journal_refuses_what_the_other_landed_before(tmp_path: Path) -> None:
    """The two guards as the journal checks them under its writer's lock, each side landing
    between the other's read and its append (what the races above hit when they do): a
    revoke read before the reusable approval's use, appended after it; an intent read
    before the revoke, appended after it. Nothing of either append is written."""
    until = datetime.now(UTC) + timedelta(hours=1)
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        approval = approved(rt, once=False, until=until)
        read_at = rt.journal.head()[0]  # the revoke's read, before the use
        assert str(rt.submit(_close("p1")).status) == "executed"
        late_revoke = NewEvent(
            run_id=approval.run_id, kind="approval.decided",
            subject="approval:" + approval.action_digest, actor=APPROVER,
            at=datetime.now(UTC), payload={"approval_id": approval.id, "status": "revoked",
                                           "approver_id": APPROVER, "reason": WHY},
            approval_guard=ApprovalGuard(approval.id, approval.run_id, revoking=True,
                                         after=read_at))
        head = rt.journal.head()
        with pytest.raises(ApprovalMoved):
            rt.journal.append([late_revoke])
        assert rt.journal.head() == head
        # the command reads it again: used, and reusable — revoked after its use, unguarded
        assert revoke(rt, approval.id).status is ApprovalStatus.REVOKED
        [written] = [e for e in rt.journal.events() if e.kind == "approval.decided"
                     and e.payload.get("status") == "revoked"]
        assert written.payload["used"] is True and written.seq > head[0]

        other = rt.submit(_close("p2", account="acct-2", key="close-2"))
        assert other.approval is not None
        rt.decide_approval(other.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                           once=False, until=until, resume=False)
        revoke(rt, other.approval.id)
        late_use = NewEvent(
            run_id=other.approval.run_id, kind="action.intent", subject="act:close-2",
            actor=AGENT, at=datetime.now(UTC),
            payload={"approval_id": other.approval.id, "input_hash": "sha256:x"},
            approval_guard=ApprovalGuard(other.approval.id, other.approval.run_id))
        head = rt.journal.head()
        with pytest.raises(ApprovalMoved):
            rt.journal.append([late_use])
        assert rt.journal.head() == head
        assert rt.journal.verify().intact


def test_two_revokes_at_once(tmp_path: Path) -> None:
    """Two approvers revoke one approval at the same moment: one revoke is written, the
    other is refused (the approval read again: already revoked)."""
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        for r in range(6):
            first = rt.submit(_close(f"t{r}", account=f"acct-t{r}", key=f"close-t{r}"))
            assert first.approval is not None
            rt.decide_approval(first.approval.id, approver_id=APPROVER,
                               token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                               resume=False)

            def once(approval_id: str = first.approval.id) -> Any:
                return rt.revoke_approval(approval_id, approver_id=APPROVER,
                                          token=DEMO_TOKENS[APPROVER], reason=WHY)

            got = at_once(once, once)
            refused = [g for g in got if isinstance(g, Exception)]
            assert len(refused) == 1 and "already `revoked`" in str(refused[0]), got
            _, journaled = _used_and_revoked(rt, first.approval.id)
            revokes = [e for e in rt.journal.events() if e.kind == "approval.decided"
                       and e.payload.get("status") == "revoked"
                       and e.payload.get("approval_id") == first.approval.id]
            assert journaled and len(revokes) == 1
        assert rt.journal.verify().intact
