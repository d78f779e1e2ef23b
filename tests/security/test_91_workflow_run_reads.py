"""What reading a workflow run reads does not grow with what its agent writes in it.

Finding: a workflow's agent owns its run (``test_39``) and may submit proposals into it:
each one journals its receipt, gates, intent, outcome — the run grows at the agent's
will. ``Engine.workflow_of`` folded *every* event of the run, for the workflow's steps
and for whose the run is; its callers include the human API's ``reads_workflow`` (which
folded the whole run on every request of a token to a workflow run, just to learn the
workflow's agent), ``step decide`` (the step's kind), the run's status and every
``advance`` (start, resume, decide). Measured: ``workflow_of`` decoded 62 rows in a run of
62 events and 302 in one of 302; ``reads_workflow``'s read the same; the run's status
(``runner.status``: the run view's and ``GET /api/workflows/runs/{run}``'s) twice that,
124 and 604, as it also folded the run for its state (``summary_of``).

Now who the workflow and its agent are comes from the run's ``workflow.started`` alone
(its first event, written ``if_new_run``: one row, ``Engine.workflow``); the fold reads
the workflow's own events — each step's ``step.*`` and ``human.*`` about
``step:<run>/<step>`` and the run's end about ``workflow:<id>``, of those kinds only
(``events_for_subject(kinds=)``: the agent's events are skipped in the index, not
decoded) — and a tool step's recorded outcome is read when the step needs it (its
proposal's last outcome and first receipt). The status's state and why come from the
derived ``run_state`` row (``Journal.run_state_row``, nothing decoded) and what ``why``
names (the waiting steps' requests, the open tasks or the last outcome). The fold's
result and the status are unchanged. Counted as
the event rows the journal decodes (not time: the machine is shared), on both journals.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, ledger_for
from cradle_kg.runs import summary_of
from cradle_kg.workflow import Engine
from cradle_kg.workflow.definitions import load_file
from cradle_kg.workflow.runner import decide, status
from tests.workflow.conftest import recorded

from .inputcli import fresh_home
from .mcp_http import ROOT
from .reads import rows_read as _rows

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = ROOT / "examples" / "workflows" / "credit-review.yaml"


def _steps(fold: Any) -> tuple[Any, ...]:
    """What the fold says of the workflow's steps and its run's start and end."""
    return (fold.started, fold.finished, fold.completed, fold.failed, fold.begun,
            fold.skipped, fold.requested, fold.decided)


def _size(rt: Runtime, run: str) -> int:
    return sum(1 for _ in rt.journal.events(run_id=run))


@pytest.mark.slow
def test_a_workflow_run_reads_the_same_whatever_its_agent_wrote(
        tmp_path: Path, decoded: Callable[[], int]) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        engine = Engine(rt, client=recorded())
        wf = load_file(FLOW)
        run = engine.start(wf, {"account": "acct-3", "amount": 15, "reason": "refund"}).run_id
        _, quiet = engine.workflow_of(run)
        owner, fold, shown, n = [], [], [], 0
        for upto in (60, 300):
            while _size(rt, run) < upto:  # the workflow's agent speaks in its run
                n += 1
                raw = {"id": f"p-{n}", "task_id": run, "run_id": run, "agent_id": wf.agent,
                       "action": {"action_type": "demo.ledger.balance",
                                  "target": "ledger:acct-3", "arguments": {"account": "acct-3"}}}
                parsed = rt.parse_proposal(raw)
                rt.claim_run(parsed.effective_run_id, wf.agent)
                assert rt.submit(parsed).status.value == "executed"
            k, agent = _rows(decoded, lambda: engine.workflow(run).agent)
            assert agent == wf.agent
            owner.append(k)
            k, (_, folded) = _rows(decoded, lambda: engine.workflow_of(run))
            fold.append(k)
            assert _steps(folded) == _steps(quiet)  # the agent's events change nothing of the fold
            k, st = _rows(decoded, lambda: status(engine, run))
            shown.append(k)
            full = summary_of(rt.journal, run)  # what the status said before
            assert (st["state"], st["why"]) == (full["state"], full["why"])
            assert st["state"] == "waiting_for_person" and "review" in st["why"][0]
        # before: every event of the run (62 and 302 rows, both reads); now the start
        # (1 row), and it with the workflow's own events (the review's two: 3 rows)
        assert owner == [1, 1], owner
        assert fold[1] == fold[0] <= 3, fold
        # the status: before, twice the run (124 and 604 rows); now the fold and the
        # waiting step's request (4 rows)
        assert shown[1] == shown[0] <= 4, shown
        assert "review" in {k[0] for k in quiet.requested} and not quiet.decided

        # the run goes on as before: the review answered, the credit made by its tool step
        done = decide(rt, engine, run, "review", by=APPROVER, token=DEMO_TOKENS[APPROVER],
                      answer="pay")
        assert done["status"] == "completed", done
        assert ledger_for(rt).balance("acct-3") == 15
        st, full = status(engine, run), summary_of(rt.journal, run)
        assert (st["state"], st["why"]) == (full["state"], full["why"])
        assert st["state"] == "completed" and st["ended"]["kind"] == "workflow.completed"
        again = engine.advance(run)  # finished: only reported, nothing run twice
        assert again.status == "completed" and again.outputs == done["outputs"]
        assert ledger_for(rt).balance("acct-3") == 15
