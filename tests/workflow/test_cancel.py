"""``workflow cancel``: what a cancel does to a run's approvals, its projection and its
replay; two answers racing on one step (``tests/security/test_286`` … ``test_290`` for the
findings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, REQUESTER
from cradle_kg.errors import ApprovalError, CradleError, RunCancelledError
from cradle_kg.graph.project import event_triples
from cradle_kg.records import ApprovalStatus
from cradle_kg.workflow import runner
from cradle_kg.workflow.cancel import cancel
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli
from tests.racers import at_once
from tests.security.gated_flow import gated_home, waiting_runs
from tests.workflow.test_starting_runs import FLOW as CLOSE_THEN_REVIEW

pytestmark = pytest.mark.usefixtures("journal_backend")

BOB, ALICE = DEMO_TOKENS[APPROVER], DEMO_TOKENS[REQUESTER]
#: one human step, nothing else: a run that waits as soon as it starts
REVIEW_ONLY = """workflow: review-only
version: "1"
agent: agent:ledger-assistant
input:
  type: object
  properties:
    account: {type: string, pattern: "^[a-z0-9-]+$"}
  required: [account]
  additionalProperties: false
steps:
  - id: review
    kind: human
    question: "Look at {account}?"
    answers: [look, skip]
    inputs: {account: input.account}
    rule_fields: [account]
"""


def _workflow(home: Path, name: str, text: str) -> Path:
    (home / "workflows").mkdir(exist_ok=True)
    path = home / "workflows" / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_cancel_rejects_the_approval_its_run_waits_on(wf_home: Path) -> None:
    path = _workflow(wf_home, "close-then-review", CLOSE_THEN_REVIEW)
    with Runtime(wf_home, graph_sync=False) as rt:
        out = runner.start(runner.open_engine(rt), path, {"account": "acct-1"}, run_id="wf:c1")
        assert out["status"] == "waiting_approval", out
        (request,), _ = rt.journal.approval_requests(undecided=True, run_id="wf:c1")
        approval_id = request.payload["approval"]["id"]
        assert rt.journal.waiting(AGENT) == 1

        head = rt.journal.head()
        with pytest.raises(ApprovalError, match="cannot approve"):  # the agent acts for her
            cancel(rt, runner.open_engine(rt), "wf:c1", by=REQUESTER, token=ALICE, reason="x")
        assert rt.journal.head() == head  # refused whole: nothing written

        done = cancel(rt, runner.open_engine(rt), "wf:c1", by=APPROVER, token=BOB,
                      reason="the account stays open")
        assert done["rejected_approvals"] == [approval_id] and done["closed_steps"] == []
        state = rt.approvals.get(approval_id).approval
        assert (state.status, state.approver_id) == (ApprovalStatus.REJECTED, APPROVER)
        assert rt.journal.waiting(AGENT) == 0
        kinds = [e.kind for e in rt.journal.events(run_id="wf:c1")]
        assert kinds[-3:] == ["approval.decided", "run.outcome", "workflow.failed"]
        with pytest.raises(ApprovalError, match="already"):  # decided for good
            rt.decide_approval(approval_id, approver_id=APPROVER, token=BOB,
                               status=ApprovalStatus.APPROVED)
        assert "action.intent" not in [e.kind for e in rt.journal.events(run_id="wf:c1")]
        with pytest.raises(RunCancelledError, match="the account stays open"):
            runner.resume(runner.open_engine(rt), "wf:c1")
        assert rt.journal.verify().intact
    checked = run_cli("audit", "verify", "--semantics", "--home", str(wf_home))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_cancel_is_projected_and_replayed(wf_home: Path) -> None:
    path = _workflow(wf_home, "review-only", REVIEW_ONLY)
    with Runtime(wf_home, graph_sync=False) as rt:
        runner.start(runner.open_engine(rt), path, {"account": "acct-2"}, run_id="wf:c2")
        done = cancel(rt, runner.open_engine(rt), "wf:c2", by=APPROVER, token=BOB,
                      reason="not needed")
        (end,) = [e for e in rt.journal.events(run_id="wf:c2") if e.seq == done["seq"]]
        assert (end.kind, end.actor, end.payload["code"]) == ("workflow.failed", APPROVER,
                                                              "cancelled")
        triples = event_triples(end)
        assert any("#reason>" in t and f"cancelled by `{APPROVER}`: not needed" in t
                   for t in triples), triples
        assert rt.journal.open_step_requests(run_id="wf:c2")[1] == 0
    report = strict_replay(wf_home, ["wf:c2"])  # the cancel is copied, as an answer is
    assert report.runs == ["wf:c2"]


def test_two_answers_to_one_step_one_wins(tmp_path: Path) -> None:
    home = gated_home(tmp_path / "home", waiting=10)
    with Runtime(home, graph_sync=False) as rt:
        for run in waiting_runs(rt, 6, "two"):
            got = at_once(*(lambda run=run, who=who, token=token, answer=answer: runner.decide(
                rt, runner.open_engine(rt), run, "review", by=who, token=token, answer=answer)
                for who, token, answer in ((APPROVER, BOB, "go"), (REQUESTER, ALICE, "stop"))))
            won = [g for g in got if isinstance(g, dict)]
            lost = [g for g in got if not isinstance(g, dict)]
            assert len(won) == 1 and won[0]["status"] == "completed", got
            assert len(lost) == 1 and isinstance(lost[0], CradleError), got
            assert lost[0].code == "input_error", lost[0].message  # the step does not wait
            kinds = [e.kind for e in rt.journal.events(run_id=run)]
            assert kinds.count("human.decided") == 1 and kinds.count("workflow.completed") == 1
        assert rt.journal.verify().intact
