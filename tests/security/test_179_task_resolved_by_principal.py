"""Who may never approve an agent's actions does not close the escalations of its runs.

Finding (eleventh attack review): when the runtime stops deciding it opens a human task —
a verification that failed, a tool whose effect nobody knows, a run out of repairs — and
the run reads ``escalated`` until a person closes the task with a note of what they did
(``POST /api/tasks/{id}/resolve``, ``tasks resolve``; an approver's token). An approval is
never given by the agent that asked or the person it acts for, nor a workflow's human step
answered by them (``test_67``), but any approver closed any task: in the demo home the
ledger agent acts for ``user:alice``, an approver, and alice closed the escalation of her
own agent's run ("checked, all fine") — the run stopped reading ``escalated`` and the task
left everyone's inbox, the second look the escalation asks for given by the one person it
should not be.

Now closing a task is refused to the run's agent (its owner), the person it acts for and
whoever started the run (``started_by``, ``test_177``): ``ApprovalError`` (403 over the
JSON API, ``error:`` on the command line), nothing journaled, the task still open; another
approver closes it as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg import OutcomeStatus, Proposal, Runtime, Verdict
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, REQUESTER
from cradle_kg.errors import ApprovalError
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.loop.gate1.findings import Finding
from cradle_kg.server.api import make_router
from tests.conftest import proposal

pytestmark = pytest.mark.usefixtures("journal_backend")


def _always_repair(p: Proposal, spec: object) -> list[Finding]:
    return [Finding(code="odd", message="repair it", verdict=Verdict.REPAIR)]


def _escalated(rt: Runtime, run: str) -> str:
    """The agent's run escalated to a person (its repairs used up): its open task."""
    rt.register_validator("demo.ledger.credit", _always_repair, name="always")
    for i in range(rt.config.repair_budget + 1):
        out = rt.submit(proposal(f"{run}-p{i}", "demo.ledger.credit",
                                 {"account": "a", "amount": 3}, task_id=run, agent=AGENT))
    assert out.status is OutcomeStatus.ESCALATED
    [task] = [t.id for t in open_tasks(rt.journal, run_id=f"run:{run}")]
    return task


def test_the_agents_principal_cannot_close_its_escalation(ledger_home: Path) -> None:
    with Runtime(ledger_home, graph_sync=False) as rt:
        agent = rt.config.agent(AGENT)
        assert agent is not None and agent.acts_for == REQUESTER
        assert rt.config.approver(REQUESTER) is not None  # alice is an approver too
        task = _escalated(rt, "esc-1")
        before = rt.journal.head()
        with pytest.raises(ApprovalError, match=REQUESTER):  # before: closed
            rt.resolve_task(task, by=REQUESTER, token=DEMO_TOKENS[REQUESTER],
                            note="checked, all fine")
        assert rt.journal.head() == before  # nothing journaled
        assert [t.id for t in open_tasks(rt.journal, run_id="run:esc-1")] == [task]
        done = rt.resolve_task(task, by=APPROVER, token=DEMO_TOKENS[APPROVER],
                               note="reconciled with the bank statement")
        assert done.resolved_by == APPROVER


def test_the_api_refuses_it(ledger_home: Path) -> None:
    with Runtime(ledger_home, graph_sync=False) as rt:
        task = _escalated(rt, "esc-2")
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            def close(who: str) -> int:
                return client.post(f"/api/tasks/{task}/resolve", json={"note": "fine"},
                                   headers={"Authorization": f"Bearer {DEMO_TOKENS[who]}"}
                                   ).status_code

            assert close(REQUESTER) == 403  # before: 200
            assert [t.id for t in open_tasks(rt.journal, run_id="run:esc-2")] == [task]
            assert close(APPROVER) == 200
