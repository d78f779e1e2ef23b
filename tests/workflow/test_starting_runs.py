"""A run whose tool step waits for an approval counts once in ``waiting_per_agent``.

``tests/security/test_249`` counts an agent's workflow runs on their way to their first
human step; a run whose tool step's proposal waits for a person is on its way *and* holds
the agent's undecided approval: the count leaves such a run out, so it counts once, by its
approval — and counts again, as its open step, once the approval walks it on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")

#: closing an account needs an approval; a person then reviews the closure
FLOW = """workflow: close-then-review
version: "1"
agent: agent:ledger-assistant
input:
  type: object
  properties:
    account: {type: string, pattern: "^[a-z0-9-]+$"}
  required: [account]
  additionalProperties: false
steps:
  - id: close
    kind: tool
    tool: demo.ledger.close_account
    tools: [demo.ledger.close_account]
    target: "ledger:{account}"
    inputs: {account: input.account}
    input:
      type: object
      properties:
        account: {type: string}
      required: [account]
      additionalProperties: false
    output:
      type: object
      properties:
        ok: {type: boolean}
      required: [ok]
  - id: review
    kind: human
    question: "Closed {account}: notify the customer?"
    answers: [notify, hold]
    inputs: {account: input.account}
    rule_fields: [account]
"""
BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


def test_a_run_waiting_on_its_approval_counts_once(wf_home: Path) -> None:
    config = load_config(wf_home / "config.json")
    save_config(wf_home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update={"waiting_per_agent": 2})}))
    (wf_home / "workflows").mkdir()
    (wf_home / "workflows" / "close-then-review.yaml").write_text(FLOW, encoding="utf-8")
    with Runtime(wf_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}

        def start(account: str) -> tuple[int, dict[str, object]]:
            out = client.post("/api/workflows/close-then-review/runs", headers=agent,
                              json={"input": {"account": account}})
            return out.status_code, out.json()

        first = start("acct-1")
        assert first[0] == 200 and first[1]["status"] == "waiting_approval", first
        assert rt.journal.waiting(AGENT) == 1  # its approval; not its run besides
        second = start("acct-2")
        assert second[0] == 200 and second[1]["status"] == "waiting_approval", second
        assert rt.journal.waiting(AGENT) == 2
        assert start("acct-3")[0] == 429

        (approval,), _ = rt.journal.approval_requests(undecided=True, run_id=str(
            first[1]["run_id"]))
        approval_id = approval.payload["approval"]["id"]
        approved = client.post(f"/api/approvals/{approval_id}/approve", headers=BOB, json={})
        assert approved.status_code == 200, approved.text
        assert approved.json()["workflow"]["status"] == "waiting_human", approved.json()
        assert rt.journal.waiting(AGENT) == 2  # its review now, and the other's approval
        assert start("acct-3")[0] == 429
        assert rt.journal.verify().intact
