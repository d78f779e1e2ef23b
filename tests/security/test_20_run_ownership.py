"""A run is its first proposal's agent's at the entry points an agent reaches with its own
credentials (found by the gateway review, finding A): another identity that names the run —
run ids are not secrets: results, pages and hand-offs show them — is refused before anything
is journaled, through a governed session (MCP, LangGraph) and the JSON API alike; and an
approval given to one agent's action is never usable by another agent's identical one,
whoever submits it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.errors import RunOwnershipError
from cradle_kg.integrations.calls import GovernedSession, HostMeta
from cradle_kg.records import ApprovalStatus, HumanApproval
from tests import oneshot

from ..server.conftest import start_server, stop_server
from .mcp_http import AGENT, MALLORY, token_for, two_agent_fixtures


def _proposal(agent: str, pid: str, run: str, amount: int = 5) -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": agent,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-1",
                       "arguments": {"account": "acct-1", "amount": amount}}}


home, rt = two_agent_fixtures()


def test_another_agent_is_refused_in_a_run_and_journals_nothing(rt: Runtime) -> None:
    """Through a governed session (what MCP and LangGraph run): refused, nothing written."""
    alice, mallory = GovernedSession(rt, AGENT), GovernedSession(rt, MALLORY)
    first = alice.call("demo.ledger.credit", {"account": "acct-1", "amount": 5})
    assert first.status == "executed"
    head = rt.journal.head()
    theirs = mallory.call("demo.ledger.credit", {"account": "acct-1", "amount": 7},
                          HostMeta(run=alice.run_id))
    assert theirs.status == "refused" and "belongs to `agent:ledger-assistant`" in theirs.text
    assert theirs.structured["reason_codes"] == ["run_not_yours"]
    assert rt.journal.head() == head  # nothing of the attempt, not even a denial
    # its own run, and the owner's next step, go on as before
    assert mallory.call("demo.ledger.credit", {"account": "acct-1", "amount": 7}).status \
        == "executed"
    assert alice.call("demo.ledger.credit", {"account": "acct-1", "amount": 9}).status \
        == "executed"
    with pytest.raises(RunOwnershipError):
        rt.claim_run(alice.run_id, MALLORY)
    rt.claim_run(alice.run_id, AGENT)
    rt.claim_run("run:new", MALLORY)  # a run nobody proposed in yet: claimed
    with pytest.raises(RunOwnershipError):
        rt.claim_run("run:new", AGENT)


@pytest.mark.slow
def test_the_json_api_answers_403_and_journals_nothing(home: Path, rt: Runtime,
                                                       tmp_path: Path) -> None:
    rt.submit(_proposal(AGENT, "p1", "run:alice"))
    head = rt.journal.head()
    rt.close()
    token = token_for(home, MALLORY)
    srv = start_server(["--home", str(home)], tmp_path / "server.log", home)
    try:
        answer = oneshot.post(srv.url + "/api/proposals",
                            json=_proposal(MALLORY, "p2", "run:alice"),
                            headers={"Authorization": f"Bearer {token}"}, timeout=60)
    finally:
        stop_server(srv)
    assert answer.status_code == 403, answer.text
    assert "belongs to" in answer.text
    with Runtime(home) as again:
        assert again.journal.head() == head


def test_an_approval_is_usable_only_by_the_agent_that_asked(rt: Runtime) -> None:
    now = datetime.now(UTC)
    given = HumanApproval(id="apr-1", decision_id="dec-1", proposal_id="p1", run_id="run:r",
                          action_digest="sha256:" + "0" * 64, requested_by=AGENT,
                          requested_at=now, status=ApprovalStatus.APPROVED,
                          approver_id="human:approver", decided_at=now, once=False,
                          expires_at=now + timedelta(hours=1))

    class _State:
        approval, excluded = given, frozenset[str]()

    book = rt.approvals
    book.decided_for_digest = lambda digest, **_: [_State()]  # type: ignore[method-assign]
    assert book.usable(given.action_digest, now, AGENT, run_id="run:r") is given
    assert book.usable(given.action_digest, now, MALLORY, run_id="run:r") is None


def test_an_agent_sees_only_the_approvals_its_own_actions_asked_for(
        home: Path, rt: Runtime, tmp_path: Path) -> None:
    """Over the JSON API an approval's view carries the action's arguments: an approver sees
    every one, an agent only those of its own actions (another's is 404, and not listed)."""
    close = {"id": "p-close", "task_id": "t", "run_id": "run:alice", "agent_id": AGENT,
             "action": {"action_type": "demo.ledger.close_account", "target": "ledger:acct-9",
                        "arguments": {"account": "acct-9"}}}
    rt.submit(_proposal(AGENT, "p1", "run:alice"))
    waiting = rt.submit(close)
    assert str(waiting.status) == "awaiting_approval" and waiting.approval is not None
    approval = waiting.approval.id
    rt.close()
    alice, mallory = token_for(home, AGENT), token_for(home, MALLORY)
    srv = start_server(["--home", str(home)], tmp_path / "server.log", home)
    try:
        def get(path: str, token: str) -> httpx.Response:
            return oneshot.get(srv.url + path, headers={"Authorization": f"Bearer {token}"},
                             timeout=60)

        assert get(f"/api/approvals/{approval}", alice).json()["action"]["arguments"] == {
            "account": "acct-9"}
        assert approval in {a["id"] for a in get("/api/approvals", alice).json()}
        assert get(f"/api/approvals/{approval}", mallory).status_code == 404
        assert approval not in {a["id"] for a in get("/api/approvals", mallory).json()}
    finally:
        stop_server(srv)
