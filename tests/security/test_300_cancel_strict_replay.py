"""A cancel that rejected its run's approval made the run's strict replay diverge.

Finding (review of the eighteenth round's own changes): the README says of a cancel that
"strict replay copies it as it copies an answer" — and it does copy the cancel's
``workflow.failed`` and the ``approval.decided`` it writes. But a cancel of a run waiting
on an approval writes a third event in the same append, the ``run.outcome`` (``denied``)
that ends the rejected proposal's wait, and the replay took that one for the run's own:
it walked the run to produce it, the walk submitted the tool step's proposal again, and
``cradle-kg replay --strict`` answered "diverges at seq N (`run.outcome`): the replay
produced `proposal.received` instead" (exit 1) for a journal nobody touched. An auditor
is told the journal does not reproduce. A person's own rejection of a run's approval
(``approvals reject``) writes the same pair and diverged the same way.

Now the outcome a person's decision writes with it (the event right after their
``approval.decided``, about that approval, saying what they decided) is an input as the
decision is: copied, never re-derived. The run replays hash for hash.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, prepare_home
from cradle_kg.records import ApprovalStatus
from cradle_kg.workflow import runner
from cradle_kg.workflow.cancel import cancel
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli
from tests.workflow.test_cancel import _workflow
from tests.workflow.test_starting_runs import FLOW as CLOSE_THEN_REVIEW

BOB = DEMO_TOKENS[APPROVER]


@pytest.mark.parametrize("how", ["cancel", "reject", "changes"])
def test_a_run_whose_approval_a_person_decided_replays(tmp_path: Path, how: str) -> None:
    wf_home = tmp_path / "home"
    prepare_home(wf_home)
    path = _workflow(wf_home, "close-then-review", CLOSE_THEN_REVIEW)
    with Runtime(wf_home, graph_sync=False) as rt:
        out = runner.start(runner.open_engine(rt), path, {"account": "acct-1"}, run_id="wf:r1")
        assert out["status"] == "waiting_approval", out
        (request,), _ = rt.journal.approval_requests(undecided=True, run_id="wf:r1")
        if how == "cancel":
            done = cancel(rt, runner.open_engine(rt), "wf:r1", by=APPROVER, token=BOB,
                          reason="the account stays open")
            assert done["rejected_approvals"] == [request.payload["approval"]["id"]]
        else:
            rt.decide_approval(request.payload["approval"]["id"], approver_id=APPROVER,
                               token=BOB, reason="not this one", status=(
                                   ApprovalStatus.REJECTED if how == "reject"
                                   else ApprovalStatus.CHANGES_REQUESTED))
        kinds = [e.kind for e in rt.journal.events(run_id="wf:r1")]
        assert "run.outcome" in kinds[kinds.index("approval.decided"):], kinds
    report = strict_replay(wf_home, ["wf:r1"])  # before: ReplayDivergenceError
    assert report.runs == ["wf:r1"]
    replayed = run_cli("replay", "--strict", "wf:r1", "--home", str(wf_home))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
