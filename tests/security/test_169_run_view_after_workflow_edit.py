"""A run's page is read whatever became of its workflow's file.

Finding (tenth attack review, part two): a workflow run records the file it runs by path
and hash; once the file is edited — which the refusal itself recommends (``bump `version`
when editing``) — or removed, the run cannot walk on (by design: the definition it
started under is gone). But the run's page went with it: ``GET /api/runs/{run}/view``
(the run's state, why it waits, its lanes, the approvals it waits for) loaded the
workflow's file to show its steps — and, for an agent's token, to learn the workflow's
agent — and answered 422 "the workflow file … changed since the run started" for every
earlier run of that workflow, to approvers and auditors alike: a run waiting for an
approval could no longer be looked at where the approval is decided.

Now the run view reads who the workflow's agent is from the run's ``workflow.started``
(one row, no file), and says why the file cannot be read (``workflow_error``).

Later (fourteenth session) the run's steps are shown too — as its ``workflow.started``
recorded them (id and kind), with their states from the journal, without their questions —
on the view, on ``GET /api/workflows/runs/{run}`` (which answered 422) and on ``cradle-kg
workflow status`` (exit 2): an auditor reads every earlier run of an edited workflow. The
run still cannot walk on under a file it did not start with.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.home import Home
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server.api import make_router
from cradle_kg.server.auth import issue_agent_token
from tests.security.test_168_approved_then_workflow_fails import _waiting
from tests.test_shell import cli

pytestmark = pytest.mark.usefixtures("journal_backend")

BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
#: the steps close-9 recorded when it started (``CLOSE_FLOW``): one tool step
STEPS = [("close", "tool")]


def test_the_run_view_is_read_after_its_workflow_file_changed(ledger_home: Path) -> None:
    approval_id = _waiting(ledger_home)  # the run close-9 waits; its workflow's file then edited
    with Runtime(ledger_home, graph_sync=False) as rt:
        agent_token = issue_agent_token(Home(ledger_home), rt.config, AGENT)
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            for who in (BOB, {"Authorization": f"Bearer {agent_token}"}):
                view = client.get("/api/runs/close-9/view", headers=who)
                assert view.status_code == 200, view.text
                body = view.json()
                assert [i["id"] for i in body["inbox"]] == [approval_id]
                assert body["lanes"], body
                assert "changed since the run started" in body["workflow_error"]["message"]
                recorded = body["workflow_status"]
                assert recorded["workflow_error"] == body["workflow_error"]
                assert [(st["id"], st["kind"]) for st in recorded["steps"]] == STEPS
                assert recorded["state"] == body["state"]
            shown = client.get("/api/workflows/runs/close-9", headers=BOB)
            assert shown.status_code == 200, shown.text  # was 422
            assert [(st["id"], st["kind"]) for st in shown.json()["steps"]] == STEPS
            assert "changed since" in shown.json()["workflow_error"]["message"]
            # walking on under the edited file is still refused
            resumed = client.post("/api/workflows/runs/close-9/resume", headers=BOB)
            assert resumed.status_code == 422, resumed.text


def test_the_cli_status_of_a_run_whose_file_changed(ledger_home: Path) -> None:
    """``cradle-kg workflow status`` read the file and exited 2; now it shows the run (the
    command line in process, typer's runner)."""
    _waiting(ledger_home)
    shown = cli("workflow", "status", "close-9", "--home", str(ledger_home), "--format",
                "json")
    assert shown.exit_code == 0, shown.output
    status = json.loads(shown.stdout)
    assert [(st["id"], st["kind"]) for st in status["steps"]] == STEPS
    assert status["steps"][0]["state"] == "running"  # waits for its approval
    assert "changed since the run started" in status["workflow_error"]["message"]
    table = cli("workflow", "status", "close-9", "--home", str(ledger_home))
    assert table.exit_code == 0, table.output
    assert "note: the workflow file" in table.stdout and "close" in table.stdout
    gone = ledger_home / "workflows" / "close-account.yaml"
    gone.unlink()  # removed: still shown
    assert cli("workflow", "status", "close-9", "--home", str(ledger_home)).exit_code == 0
    assert cli("workflow", "status", "nope", "--home", str(ledger_home)).exit_code == 2
