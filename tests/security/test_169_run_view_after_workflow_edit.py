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
(one row, no file), and shows the run without its steps when the file cannot be read,
saying why (``workflow_error``); ``GET /api/workflows/runs/{run}`` still refuses (it is
the workflow's own status).
"""

from __future__ import annotations

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

pytestmark = pytest.mark.usefixtures("journal_backend")

BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


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
                assert body.get("workflow_status") is None
                assert "changed since the run started" in body["workflow_error"]["message"]
            refused = client.get("/api/workflows/runs/close-9", headers=BOB)
            assert refused.status_code == 422  # the workflow's own status: as before
