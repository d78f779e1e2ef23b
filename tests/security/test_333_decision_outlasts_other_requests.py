"""A person's decision on an approval could be held off by an agent asking for the same
action elsewhere.

Finding (left by the twentieth round, beside ``test_330``'s revoke): ``approve``,
``reject`` and ``request-changes`` were written ``if_last`` over the newest event about
the action's digest in *any* run, and read again at most five times when one landed
between the read and the append (``append_unmoved``) — then refused: "other events about
its action keep arriving first; decide again". Every run's request for the same action
is such an event, and an agent asks in as many runs of its own as it likes: one asking
inside each read made every decision give up, and agents asking in a loop from other
processes made some of a person's decisions fail.

Now a decision is written once by a key of its own (``approval-decision:<id>``, UNIQUE
in the journal, a prefix no agent may choose), not over the digest's newest event: what
can stop it is only another decision of the same approval — read again, refused, it is no
longer pending (at most two reads) — never another run's request, view or decision. The
events a decision writes are the same but for that key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.records import ApprovalStatus
from tests.racers import race, racer, racing_context

from .mcp_http import MALLORY, two_agent_home
from .test_236_pending_key_asks_once import _close
from .test_330_revoke_outlasts_other_requests import _asking_in_every_read

pytestmark = pytest.mark.usefixtures("journal_backend")


def _decide(rt: Runtime, approval_id: str, status: ApprovalStatus) -> Any:
    return rt.decide_approval(approval_id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                              status=status, reason="r", resume=False)[0]


def _decisions(rt: Runtime, approval_id: str) -> list[Any]:
    return [e for e in rt.journal.events() if e.kind == "approval.decided"
            and e.payload.get("approval_id") == approval_id]


@pytest.mark.parametrize("status", [ApprovalStatus.APPROVED, ApprovalStatus.REJECTED,
                                    ApprovalStatus.CHANGES_REQUESTED])
def test_a_decision_lands_while_other_runs_ask_for_the_action(
        tmp_path: Path, status: ApprovalStatus) -> None:
    """Each time the decision checks its approver (after its read, before its append), the
    agent asks for the same action in a new run of its own first. Before: JournalError
    "decide again" after five reads, the approval left pending."""
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        waiting = rt.submit(_close("p0", key="close-k0"))
        assert waiting.approval is not None
        approval_id = waiting.approval.id
        asked, real = _asking_in_every_read(rt)
        try:
            decided = _decide(rt, approval_id, status)
        finally:
            rt.approvals.approvers = real  # the agent stops asking elsewhere
        assert decided.status is status
        [written] = _decisions(rt, approval_id)
        other = [e.seq for e in rt.journal.events() if e.kind == "approval.requested"
                 and e.run_id.startswith("run:other-")]
        assert asked and len(other) == len(asked) and max(other) < written.seq  # in between
        if status is not ApprovalStatus.APPROVED:  # the proposal's wait is ended
            last = rt.journal.latest_outcome("run:alice", "p0")
            assert last is not None
            assert last.payload["outcome"]["status"] == (
                "denied" if status is ApprovalStatus.REJECTED else "repair")
        # still once: a second decision reads it decided, refused, nothing more written
        with pytest.raises(ApprovalError, match="already"):
            _decide(rt, approval_id, ApprovalStatus.REJECTED)
        assert len(_decisions(rt, approval_id)) == 1
        assert rt.journal.verify(semantics=True).intact


def test_two_decisions_at_once_one_lands_while_other_runs_ask(tmp_path: Path) -> None:
    """Deterministic: a rejection lands between an approval's read and its append (inside
    the approval's approver check), and other runs keep asking meanwhile. The approval's
    append is refused under the writer's lock (the decision's key is taken), read again:
    no longer pending, refused. One decision is written, the rejection."""
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        waiting = rt.submit(_close("p0", key="close-k0"))
        assert waiting.approval is not None
        approval_id = waiting.approval.id
        asked, real = _asking_in_every_read(rt)
        flood = rt.approvals.approvers
        rejected: list[Any] = []

        def approvers() -> Any:
            if not rejected:  # the other person's rejection, first, whole
                rejected.append(None)
                rejected[0] = _decide(rt, approval_id, ApprovalStatus.REJECTED)
            return flood()

        rt.approvals.approvers = approvers
        try:
            with pytest.raises(ApprovalError, match="already `rejected`"):
                _decide(rt, approval_id, ApprovalStatus.APPROVED)
        finally:
            rt.approvals.approvers = real
        assert rejected[0].status is ApprovalStatus.REJECTED and asked
        [written] = _decisions(rt, approval_id)
        assert written.payload["status"] == "rejected"
        assert rt.approvals.get(approval_id).approval.status is ApprovalStatus.REJECTED
        assert rt.journal.verify(semantics=True).intact


#: the asks each flooding process makes at most (within the agent's waiting quota)
_ASKS = 100


def _flood(home: str, worker: int, going: Any, stop: Any, out: Any) -> None:
    """An agent (``MALLORY``) asking for the same action in new runs of its own, one after
    the other, until told to stop (``going`` once it has asked): how many it asked."""
    n = 0
    with Runtime(Path(home), graph_sync=False) as rt:
        while n < _ASKS and not stop.is_set():
            asked = _close(f"f{worker}-{n}", key=f"close-f{worker}-{n}",
                           run=f"run:flood-{worker}-{n}")
            asked["agent_id"] = MALLORY
            assert str(rt.submit(asked).status) == "awaiting_approval"
            n += 1
            going.set()
    out.put(n)


def test_decisions_land_while_agents_flood_other_runs(tmp_path: Path) -> None:
    """Two processes of an agent ask for the same action in other runs as fast as they
    can while a person decides the approvals one run asked for: every decision lands, each
    on its first read (its approver is checked once per read: counted). Before, a request
    landing between a read and its append cost the decision a read, five lost in a row
    gave up ("decide again")."""
    home = two_agent_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        ids = []
        for i in range(16):
            waiting = rt.submit(_close(f"p{i}", key=f"close-k{i}"))
            assert waiting.approval is not None
            ids.append(waiting.approval.id)
        ctx = racing_context()
        going, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
        procs = [racer(ctx, _flood, str(home), w, going, stop, out) for w in range(2)]
        failed: list[str] = []
        real, checks = rt.approvals.approvers, []

        def approvers() -> Any:
            checks.append(1)
            return real()

        rt.approvals.approvers = approvers

        def decide_all() -> None:
            assert going.wait(60)
            try:
                for n, approval_id in enumerate(ids):
                    status = ApprovalStatus.APPROVED if n % 2 else ApprovalStatus.REJECTED
                    try:
                        _decide(rt, approval_id, status)
                    except Exception as exc:  # the finding: counted, then asserted
                        failed.append(f"{approval_id}: {exc}")
            finally:
                stop.set()

        asked = race(procs, out, meanwhile=decide_all, timeout=180)
        rt.approvals.approvers = real
        assert failed == [], failed
        assert sum(asked) > 0
        assert len(checks) == 2 * len(ids), (len(checks), sum(asked))  # one read each
        for approval_id in ids:
            assert len(_decisions(rt, approval_id)) == 1
        assert rt.journal.verify(semantics=True).intact
