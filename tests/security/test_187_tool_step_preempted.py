"""A workflow's tool step never takes as its own an action that ran before it began.

Finding (twelfth attack review): ``credit-review`` asks a person (``review``) before its
tool step ``pay`` proposes the credit. The engine proposes the step's action under a
predictable id (``<run>/pay/<the input's hash>``), in the run the workflow's agent owns, and
took any executed outcome under that id, first proposed there by that agent, as the step's.
So the agent proposed the credit itself, under that id, while the review waited: the credit
ran at once (the policy permits the agent a credit of 400), and when Bob answered ``pay``
the step completed with that outcome — no second call, and the run said a person reviewed
the credit before it was made, though the journal had its intent before his answer.

Now a tool step's proposal is the step's only when it was first received after the step
began (its ``step.started``): one received before — the action ran before the steps ahead
of it had their say — fails the step (``preempted``, naming the proposal) and the run with
it, the early action left as it is in the run for a person to look at; a step whose own
proposal was received after it began (a resumed run) still takes its recorded outcome.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cradle_kg.canonical import content_hash
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.loop.runtime import Runtime
from cradle_kg.workflow import runner

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "credit-review.yaml"
CREDIT = {"account": "acct-5", "amount": 400}


def _kinds(rt: Runtime, run: str) -> list[str]:
    return [e.kind for e in rt.journal.events(run_id=run)]


def test_an_action_proposed_before_its_step_is_not_the_steps(ledger_home: Path) -> None:
    (ledger_home / "workflows").mkdir()
    shutil.copy(FLOW, ledger_home / "workflows")
    with Runtime(ledger_home, graph_sync=False) as rt:
        started = runner.start(runner.open_engine(rt), runner.find_definition(
            ledger_home, "credit-review"), {**CREDIT, "reason": "refund"}, run_id="wf-pre")
        assert started["status"] == "waiting_human", started
        # the agent, while the review waits: the step's own proposal id, the same credit
        early = rt.submit({"id": f"wf-pre/pay/{content_hash(CREDIT)[7:19]}",
                           "task_id": "wf-pre", "run_id": "wf-pre", "agent_id": AGENT,
                           "action": {"action_type": "demo.ledger.credit",
                                      "target": "ledger:acct-5", "arguments": CREDIT}})
        assert early.status.value == "executed"  # the policy permits it: not the point
        done = runner.decide(rt, runner.open_engine(rt), "wf-pre", "review", by=APPROVER,
                             token=DEMO_TOKENS[APPROVER], answer="pay")
        assert done["status"] == "failed", done  # before: completed
        assert done["code"] == "preempted" and "before" in done["reason"], done
        kinds = _kinds(rt, "wf-pre")
        assert kinds.count("action.intent") == 1  # the early one, nothing ran again
        assert kinds.index("action.intent") < kinds.index("human.decided")
        status = runner.status(runner.open_engine(rt), "wf-pre")
        assert status["steps"][1]["state"] == "failed", status

        # the step's own proposal, received after the step began, is the step's as before
        again = runner.start(runner.open_engine(rt), runner.find_definition(
            ledger_home, "credit-review"), {**CREDIT, "reason": "refund"}, run_id="wf-ok")
        assert again["status"] == "waiting_human"
        done = runner.decide(rt, runner.open_engine(rt), "wf-ok", "review", by=APPROVER,
                             token=DEMO_TOKENS[APPROVER], answer="pay")
        assert done["status"] == "completed", done
        assert runner.resume(runner.open_engine(rt), "wf-ok")["status"] == "completed"
        assert _kinds(rt, "wf-ok").count("action.intent") == 1
