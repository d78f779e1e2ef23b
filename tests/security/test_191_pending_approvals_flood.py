"""An agent cannot fill the approvers' inbox: a bound on its approvals waiting at once.

Finding (thirteenth attack review): a call that needs a person journals an approval
request and waits in every approver's inbox until someone decides it — and nothing bounded
how many one agent asked for: the rate and cost limits count executed calls
(``action.intent``), a call waiting for a person is none, and a request never expires
undecided. ``test_60`` made the inbox's reads cheap, not the inbox short. A prompt-injected
agent with its token asked for an approval with every proposal — closures of ``acct-0``,
``acct-1``, … over ``POST /api/proposals`` — and each was one more item in the approvers'
inbox, without end: the one the injection was after hidden among them, each one a person's
decision ("approval fatigue"), each request a proposal's worth of journal.

Now an agent has at most ``input_limits.waiting_per_agent`` approvals waiting
(256 by default; ``null``: no limit), counted from the journal's undecided approvals of
that agent when a new one is to be asked: past it the proposal is refused before anything
is journaled — 429 ``quota_exceeded`` over the JSON API, ``refused`` over MCP, ``error:``
on the command line — until a person decides some. The same proposal asked again waits on
its own approval as before; another agent's approvals do not count.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.inputs import DEFAULT_LIMITS
from cradle_kg.integrations.calls import GovernedSession
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import ApprovalStatus
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")

CAP = 5


def _close(pid: str, account: str) -> dict[str, object]:
    return {"id": pid, "task_id": "task-" + pid, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.close_account",
                       "target": f"ledger:{account}", "arguments": {"account": account}}}


def _cap(home: Path, cap: int | None) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(
            update={"waiting_per_agent": cap})}))


def _waiting(rt: Runtime, agent: str = AGENT) -> int:
    return rt.journal.approval_requests(undecided=True, requested_by=agent, limit=0)[1]


def _journaled(rt: Runtime) -> int:
    """The events but runs' claims and the quota's one record an hour (``test_217``)."""
    return sum(1 for e in rt.journal.events() if e.kind not in ("run.claimed", "quota.reached"))


def test_the_default_bounds_an_agents_waiting_approvals() -> None:
    assert DEFAULT_LIMITS.waiting_per_agent == 256  # before: no such bound


def test_an_agent_cannot_flood_the_inbox(ledger_home: Path) -> None:
    _cap(ledger_home, CAP)
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        for i in range(CAP):
            out = client.post("/api/proposals", headers=agent, json=_close(f"c{i}", f"acct-{i}"))
            assert out.status_code == 200 and out.json()["status"] == "awaiting_approval"
        assert _waiting(rt) == CAP
        before = _journaled(rt)

        # one more: refused, nothing journaled (before: 200 and a sixth item in the inbox)
        out = client.post("/api/proposals", headers=agent, json=_close("c-more", "acct-99"))
        assert out.status_code == 429, out.text
        assert out.json()["detail"]["error"] == "quota_exceeded"
        assert "waiting_per_agent" in out.json()["detail"]["hint"]
        assert _journaled(rt) == before  # the new run's claim aside, as for a limit
        # MCP's path (a governed session): refused the same way
        result = GovernedSession(rt, AGENT).call("demo.ledger.close_account",
                                                 {"account": "acct-98"})
        assert result.status == "refused", result.text
        assert result.structured["reason_codes"] == ["quota_exceeded"]
        assert _waiting(rt) == CAP

        # the same proposal again waits on its own approval, as before
        again = client.post("/api/proposals", headers=agent, json=_close("c0", "acct-0"))
        assert again.status_code == 200 and again.json()["status"] == "awaiting_approval"
        assert _waiting(rt) == CAP

        # a person decides one: the next is asked
        first = rt.approvals.pending_page(limit=1, requested_by=AGENT)[0][0][0].approval
        bob = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
        done = client.post(f"/api/approvals/{first.id}/reject", headers=bob,
                           json={"reason": "not today"})
        assert done.status_code == 200, done.text
        assert rt.approvals.get(first.id).approval.status is ApprovalStatus.REJECTED
        out = client.post("/api/proposals", headers=agent, json=_close("c-more", "acct-99"))
        assert out.status_code == 200 and out.json()["status"] == "awaiting_approval"
        assert _waiting(rt) == CAP


def test_no_limit_when_the_operator_says_so(ledger_home: Path) -> None:
    _cap(ledger_home, None)
    with Runtime(ledger_home, graph_sync=False) as rt:
        for i in range(CAP + 2):
            assert rt.submit(_close(f"n{i}", f"acct-{i}")).approval is not None
        assert _waiting(rt) == CAP + 2
