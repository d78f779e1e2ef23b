"""Viewing or deciding one approval does not read every run's requests of its action.

Finding: ``GET /api/approvals/{id}`` — open to the asking agent's own token — read the
approval (``ApprovalBook.get``), journaled the view (``view_approval``) and found the
proposal that asked (``requested_proposal``): three reads, each of *every* event of the
action's digest (``approval:<digest>``) in every run that ever asked for it. Deciding
(``decide_approval``) read them twice more. The ``test_63`` fix had scoped the
submission's reads to its run; these were left. An agent's token proposes one
irreversible action in as many runs as it likes (no limit counts proposals that wait for
a person), so after N such runs each view of one of its approvals decoded about 3N
rows under the API's lock, and each approver's decision of any of them about 2N — the
agent views in a loop, and its proposals cost it one request each: quadratic, with no
bound. Measured here: a view decoded 61 rows at 20 runs and 187 at 60, a decision 43 and
127 (now 4 and 3, whatever the runs).

Now an approval's events are read from its own run only (every event about an approval
is written in its run): ``Journal.approval_place`` gives the digest and the run in one
probe, ``events_for_subject(..., run_id=…)`` reads them. The guard that writes a decision
once is unchanged in strength: its ``if_last`` is the newest seq about the digest in any
run, probed (nothing decoded) *before* the read — an event landing in between makes the
write refused and the decision read again. Counted as the event rows the journal decodes,
on both journals.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.records import ApprovalStatus

from .inputcli import fresh_home
from .test_63_submission_reads import _close

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def _view(rt: Runtime, approval_id: str) -> None:
    """What ``GET /api/approvals/{id}`` does for the asking agent's token."""
    asked = rt.approvals.get(approval_id).approval
    assert asked.requested_by == AGENT
    seen = rt.view_approval(approval_id, viewer=AGENT)
    rt.approvals.requested_proposal(seen)


def _costs(rt: Runtime, decoded: Callable[[], int], runs: range) -> tuple[int, int]:
    """Ask for the closure in ``runs``; the rows one view and one rejection decode."""
    ids = []
    for i in runs:
        waiting = rt.submit(_close(f"p{i}", f"run:{i}"))
        assert waiting.approval is not None
        ids.append(waiting.approval.id)
    before = decoded()
    _view(rt, ids[0])
    viewed = decoded() - before
    before = decoded()
    rt.decide_approval(ids[-1], approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                       status=ApprovalStatus.REJECTED, reason="no")
    return viewed, decoded() - before


def test_one_action_asked_in_many_runs(tmp_path: Any, decoded: Callable[[], int]) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        few = _costs(rt, decoded, range(20))
        many = _costs(rt, decoded, range(20, 60))
        # before: a view 61 rows at 20 runs, 187 at 60; a decision 43 and 127
        assert many[0] <= few[0] and many[1] <= few[1], (few, many)
        assert max(few) <= 8, few

        # what it means is unchanged: a view is journaled when it is news, the run's
        # approval resumes its own proposal, and an approval is decided once
        waiting = rt.submit(_close("p-own", "run:own"))
        assert waiting.approval is not None
        _view(rt, waiting.approval.id)
        _view(rt, waiting.approval.id)
        views = [e for e in rt.journal.events_for_subject("approval:"
                                                          + waiting.approval.action_digest)
                 if e.kind == "approval.viewed" and e.run_id == "run:own"]
        assert len(views) == 1
        _, outcome = rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                                        token=DEMO_TOKENS[APPROVER],
                                        status=ApprovalStatus.APPROVED)
        assert outcome is not None and outcome.status == "executed"
        with pytest.raises(ApprovalError, match="already"):
            rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                               token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.REJECTED,
                               reason="too late")


def test_two_decisions_at_once_one_is_written(tmp_path: Any) -> None:
    """The guard still holds when the two deciders race, whatever other runs do."""
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        for i in range(5):
            rt.submit(_close(f"p{i}", f"run:{i}"))
        waiting = rt.submit(_close("p-race", "run:race"))
        assert waiting.approval is not None
        approval_id = waiting.approval.id
        results: list[str] = []
        gate = threading.Barrier(3)

        def decide(status: ApprovalStatus) -> None:
            gate.wait()
            try:
                rt.decide_approval(approval_id, approver_id=APPROVER,
                                   token=DEMO_TOKENS[APPROVER], status=status,
                                   reason="r", resume=False)
                results.append("decided")
            except ApprovalError:
                results.append("refused")

        def noise() -> None:  # another run asks for the same action meanwhile
            gate.wait()
            rt.submit(_close("p-noise", "run:noise"))

        threads = [threading.Thread(target=decide, args=(ApprovalStatus.APPROVED,)),
                   threading.Thread(target=decide, args=(ApprovalStatus.REJECTED,)),
                   threading.Thread(target=noise)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) == ["decided", "refused"], results
        decided = [e for e in rt.journal.events_for_subject("approval:"
                                                            + waiting.approval.action_digest)
                   if e.kind == "approval.decided"
                   and e.payload["approval_id"] == approval_id]
        assert len(decided) == 1
