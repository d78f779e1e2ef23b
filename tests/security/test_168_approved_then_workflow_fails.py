"""A decision that was journaled is answered as made, even when the workflow cannot walk on.

Finding (tenth attack review, part two): deciding an approval a workflow's tool step waits
for journals the decision, then walks the workflow on in the same call. When the walk
failed — the workflow's file edited since the run started (refused: "changed since the run
started"), removed, or any other refusal of the engine — that refusal became the answer:
``POST /api/approvals/{id}/approve`` a 422 ``input_error``, ``cradle-kg approvals approve``
``error: …`` and exit 2, the page an error. The approval was approved all the same (the
journal says so, ``GET /api/approvals/{id}`` too): the person was told their decision
failed when it had been recorded, and the web page offered the buttons again on its next
load only to refuse them ("already decided"). A write with an error for an answer.

Now the answer says the decision as made, and the workflow's refusal beside it
(``"workflow": {"run_id", "status": "not_continued", "error": …}``; on the CLI a warning
saying how to walk it on), exit 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server.api import make_router
from cradle_kg.workflow import runner
from tests.test_shell import CLOSE_FLOW, cli

pytestmark = pytest.mark.usefixtures("journal_backend")

BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


def _waiting(home: Path) -> str:
    """A workflow run waiting for the approval of its tool step; the file then edited."""
    (home / "workflows").mkdir(exist_ok=True)
    flow = home / "workflows" / "close-account.yaml"
    flow.write_text(CLOSE_FLOW)
    with Runtime(home, graph_sync=False) as rt:
        started = runner.start(runner.open_engine(rt), runner.find_definition(
            home, "close-account"), {"account": "acct-9"}, run_id="close-9")
        assert started["status"] == "waiting_approval"
        (pending,), _ = rt.approvals.pending_page(limit=10)
        approval_id = pending[0].approval.id
    flow.write_text(CLOSE_FLOW.replace('version: "1"', 'version: "2"'))  # edited meanwhile
    return approval_id


def test_the_api_answers_the_decision_it_journaled(ledger_home: Path) -> None:
    approval_id = _waiting(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            answer = client.post(f"/api/approvals/{approval_id}/approve", headers=BOB,
                                 json={})
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert body["approval"]["status"] == "approved"
            assert body["workflow"]["run_id"] == "close-9"
            assert body["workflow"]["status"] == "not_continued"
            assert "changed since the run started" in body["workflow"]["error"]["message"]
            seen = client.get(f"/api/approvals/{approval_id}", headers=BOB).json()
            assert seen["approval"]["status"] == "approved"


def test_the_cli_says_the_decision_and_how_to_walk_on(ledger_home: Path) -> None:
    approval_id = _waiting(ledger_home)
    done = cli("approvals", "approve", approval_id, "--as", APPROVER, "--home", str(ledger_home),
               token=DEMO_TOKENS[APPROVER], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert f"approval {approval_id}: approved" in done.stdout
    assert "workflow run close-9 did not continue" in done.output
    assert "changed since the run started" in done.output
