"""A run's state, defined once (``cradle_kg.runs.RunState``): the last outcome decides.

On the whole demo (the pilot packs included), each run reads what happened to it; the
infra incident that recovered from a failed staging deployment and ended resolved is
``completed`` — it used to read ``verification_failed``, the worst outcome of the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, DemoStep, prepare_home
from cradle_kg.errors import InputError
from cradle_kg.records import ApprovalStatus
from cradle_kg.runs import RunState, list_page, list_runs, parse_state, show_run, state_counts


@pytest.fixture(scope="module")
def demo(pilots_demo: tuple[Path, list[DemoStep]]) -> Path:
    """The session's demo home (tests/conftest.py): this module only reads it."""
    return pilots_demo[0]


def test_each_demo_run_reads_what_happened(demo: Path) -> None:
    with Runtime(demo, graph_sync=False) as rt:
        states = {r.run_id: r.state for r in list_runs(rt.journal)}
        assert states["run:uh-demo-success"] is RunState.COMPLETED  # the regression
        assert states["run:uh-demo-rollback"] is RunState.COMPLETED_WITH_FAILURES
        assert states["run:task-credit"] is RunState.COMPLETED
        assert states["run:task-big-credit"] is RunState.COMPLETED_WITH_FAILURES
        assert states["run:task-lie"] is RunState.ESCALATED
        assert states["run:task-close"] is RunState.COMPLETED  # approved, then executed
        assert states["run:customs-paper-uav"] is RunState.OPEN  # the agent must clarify
        success, _ = show_run(rt.journal, "run:uh-demo-success")
        assert "verification_failed" in success.outcomes.values()  # a failure on the way
        assert success.why() == ["`uh-demo-success-13-resolve incident`: executed"]
        counts = state_counts(rt.journal)
        assert sum(counts.values()) == len(states) and counts["escalated"] == 1
        done, total = list_page(rt.journal, limit=2, state=RunState.COMPLETED)
        assert total == sum(s is RunState.COMPLETED for s in states.values()) and len(done) == 2


def test_a_waiting_approval_then_a_rejection(tmp_path: Path) -> None:
    prepare_home(tmp_path / "h")
    with Runtime(tmp_path / "h", graph_sync=False) as rt:
        out = rt.submit({"id": "p-close", "task_id": "t-close", "agent_id": AGENT, "action": {
            "action_type": "demo.ledger.close_account", "target": "ledger:acct-9",
            "arguments": {"account": "acct-9"}}})
        summary, _ = show_run(rt.journal, out.run_id)
        assert summary.state is RunState.WAITING_FOR_PERSON
        assert summary.why()[0].startswith("`p-close`: awaiting_approval")
        assert out.approval is not None
        rt.decide_approval(out.approval.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                           status=ApprovalStatus.REJECTED,
                           reason="not this account")
        assert show_run(rt.journal, out.run_id)[0].state is RunState.COMPLETED_WITH_FAILURES


def test_an_unknown_state_is_refused() -> None:
    assert parse_state("completed") is RunState.COMPLETED
    with pytest.raises(InputError, match="unknown run state `done`"):
        parse_state("done")
