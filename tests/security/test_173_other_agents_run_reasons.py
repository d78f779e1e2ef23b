"""An agent's token reads another agent's runs without their reasons and lanes.

Finding (eleventh attack review): the JSON API shows any token every run and its events'
kind, actor and subject; what carries values is meant to be narrower — an agent sees only
the approvals its own actions asked for, and a workflow run's input and questions only
when it is that workflow's agent (``test_20``, ``test_21``). But each run's ``why`` (its
latest outcome's reasons, a waiting step's reasons) and the run view's lanes (each
proposal's tool and target, every stage's reasons: a decision's, an approver's rejection,
a tool's error, a verifier's detail) were any token's: another agent's token
(``agent:mallory``) read, on ``GET /api/runs``, ``GET /api/runs/{run}`` and ``GET
/api/runs/{run}/view``, what an approver wrote when rejecting the ledger agent's closure
of ``acct-7`` — "Jane Roe's account, under fraud investigation (case 4471)" — and the
account it was for, though the approval itself is refused to it.

Now a run's ``why`` and lanes are its agent's (the run's owner: its first proposal's or
claim's, a workflow run's agent) and the approvers': another agent's token is given the
run with ``why`` and ``lanes`` empty (its events' kind, actor and subject as before). The
run's own agent and the approvers read them as before.

In process, through the app's real router and authentication, on both journals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server.api import make_router

from .mcp_http import AGENT, MALLORY, token_for, two_agent_home

pytestmark = pytest.mark.usefixtures("journal_backend")

REASON = "Jane Roe's account, under fraud investigation (case 4471)"


def _h(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_another_agent_reads_no_reasons_of_a_run(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    alice, mallory = token_for(home, AGENT), token_for(home, MALLORY)
    with Runtime(home, graph_sync=False) as rt:
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            asked = client.post("/api/proposals", headers=_h(alice), json={
                "id": "p-close-7", "task_id": "t-7", "agent_id": AGENT, "run_id": "close-7",
                "action": {"action_type": "demo.ledger.close_account",
                           "target": "ledger:acct-7", "arguments": {"account": "acct-7"}}})
            assert asked.status_code == 200 and asked.json()["status"] == "awaiting_approval"
            approval = asked.json()["approval"]["id"]
            rejected = client.post(f"/api/approvals/{approval}/reject",
                                   headers=_h(DEMO_TOKENS[APPROVER]), json={"reason": REASON})
            assert rejected.status_code == 200, rejected.text
            # the approval itself is not mallory's to read (test_20)
            assert client.get(f"/api/approvals/{approval}",
                              headers=_h(mallory)).status_code in (403, 404)

            listed = client.get("/api/runs", headers=_h(mallory))
            one = client.get("/api/runs/close-7", headers=_h(mallory))
            view = client.get("/api/runs/close-7/view", headers=_h(mallory))
            for answer in (listed, one, view):
                assert answer.status_code == 200, answer.text
                # before: the rejection's words in `why` (all three) and the lanes (view)
                assert "fraud" not in answer.text and "Jane Roe" not in answer.text
                assert "acct-7" not in answer.text
            [run] = [r for r in listed.json() if r["run_id"] == "close-7"]
            assert run["why"] == [] and run["status"] == "denied"
            assert one.json()["why"] == [] and len(one.json()["events"]) >= 6
            assert view.json()["lanes"] == [] and view.json()["why"] == []

            # the run's own agent and an approver read them as before
            for token in (alice, DEMO_TOKENS[APPROVER]):
                seen = client.get("/api/runs/close-7/view", headers=_h(token)).json()
                assert REASON in json.dumps(seen["why"])
                [lane] = seen["lanes"]
                assert lane["target"] == "ledger:acct-7"
                assert REASON in lane["stages"][2]["reasons"]
                assert REASON in json.dumps(client.get("/api/runs/close-7",
                                                       headers=_h(token)).json()["why"])
                assert any(REASON in json.dumps(r["why"]) for r in
                           client.get("/api/runs", headers=_h(token)).json())
