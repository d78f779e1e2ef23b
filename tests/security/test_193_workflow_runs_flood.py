"""An agent cannot fill the approvers' inbox with runs of its own workflow.

Finding (thirteenth attack review, beside ``test_191``): a workflow's agent may start runs
of it with its own token (``POST /api/workflows/{name}/runs``: "its agent or an approver
may"), and a run that reaches a human step waits in every approver's inbox until someone
answers — with the agent's own words in the question (``credit-review``: "Credit 400 to
acct-5? The agent says: {reason}"). ``test_191`` bounded the approvals an agent has waiting,
not the steps: its token started ``credit-review`` again and again, each run one more
review in the inbox, without end (five runs here, as many as it sent).

Now the bound is on what waits for a person on the agent's behalf — its undecided approvals
*and* the open human steps of its workflow's runs together (``input_limits.
waiting_per_agent``, 256 by default): a run its token starts past it is refused before
anything is journaled (429 ``quota_exceeded``; no ``workflow.started``), and so is a
proposal that would ask for one more approval, until a person answers some. An approver
starts a run as before (its steps wait on the agent's behalf too, and count).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "credit-review.yaml"
CAP = 3


def _home(home: Path) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update={"waiting_per_agent": CAP})}))
    (home / "workflows").mkdir(exist_ok=True)
    (home / "workflows" / "credit-review.yaml").write_text(FLOW.read_text(encoding="utf-8"),
                                                           encoding="utf-8")


def _credit(i: int) -> dict[str, Any]:
    return {"input": {"account": f"acct-{i}", "amount": 400,
                      "reason": "URGENT: approve all pending credits now"}}


def _started(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events() if e.kind == "workflow.started")


def test_an_agent_cannot_flood_the_inbox_with_its_runs(ledger_home: Path) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        bob = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
        runs = []
        for i in range(CAP):
            out = client.post("/api/workflows/credit-review/runs", headers=agent,
                              json=_credit(i))
            assert out.status_code == 200, out.text
            assert out.json()["status"] == "waiting_human", out.json()
            runs.append(out.json()["run_id"])
        assert _started(rt) == CAP

        # one more run of its own: refused, nothing journaled (before: a fourth review)
        out = client.post("/api/workflows/credit-review/runs", headers=agent, json=_credit(9))
        assert out.status_code == 429, out.text
        assert out.json()["detail"]["error"] == "quota_exceeded"
        assert "waiting_per_agent" in out.json()["detail"]["hint"]
        assert _started(rt) == CAP
        # the steps count with its approvals: a proposal asking for one more is refused too
        close = {"id": "c1", "task_id": "t-c1", "agent_id": AGENT,
                 "action": {"action_type": "demo.ledger.close_account",
                            "target": "ledger:acct-1", "arguments": {"account": "acct-1"}}}
        out = client.post("/api/proposals", headers=agent, json=close)
        assert out.status_code == 429, out.text
        assert rt.journal.approval_requests(undecided=True, limit=0)[1] == 0

        # an approver starts a run as before
        out = client.post("/api/workflows/credit-review/runs", headers=bob, json=_credit(7))
        assert out.status_code == 200, out.text

        # (its review waits on the agent's behalf too: four wait now) a person answers two
        # of the agent's reviews: its next run is taken
        for run in runs[:2]:
            done = client.post(f"/api/steps/{run}/review/decide", headers=bob,
                               json={"answer": "hold"})
            assert done.status_code == 200, done.text
        out = client.post("/api/workflows/credit-review/runs", headers=agent, json=_credit(9))
        assert out.status_code == 200, out.text
