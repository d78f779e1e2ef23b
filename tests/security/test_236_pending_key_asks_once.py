"""Calling again with the same idempotency key while its approval waits asks nobody again.

Attack (or an honest client following the instructions): MCP's answer to a call that waits
for an approval says "call again with the same ``cradle-kg/idempotency_key`` to read the
outcome". Each such call is a new proposal (a new step of the session), and each asked the
approvers again: one more ``approval.requested`` per poll — a flood of identical items in
the approvers' inbox (and the agent's waiting count), though only one effect could run.

What must hold: a resubmission of the same action — same agent, same run, same key, same
arguments — while its approval is pending is answered with that approval
(``awaiting_approval``, its id) and journals no new request; once approved, the action runs
once and the next call with the key reads its outcome. The same key with other arguments
is still no way to that action (denied as a key conflict once the key's action ran).
Through the runtime, a governed session and a real ``cradle-kg mcp serve``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.integrations.calls import GovernedSession, HostMeta
from cradle_kg.records import ApprovalStatus

from .mcp_http import AGENT, Client, fresh, serve, token_for, two_agent_home

CLOSE = "demo.ledger.close_account"


def _close(pid: str, account: str = "acct-9", key: str = "close-9",
           run: str = "run:alice") -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": AGENT,
            "action": {"action_type": CLOSE, "target": f"ledger:{account}",
                       "arguments": {"account": account}, "idempotency_key": key}}


def _requests(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events() if e.kind == "approval.requested")


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with Runtime(two_agent_home(tmp_path / "home")) as runtime:
        yield runtime


def test_a_resubmission_reads_the_pending_approval(rt: Runtime) -> None:
    first = rt.submit(_close("p1"))
    assert str(first.status) == "awaiting_approval" and first.approval is not None
    for pid in ("p2", "p3"):
        again = rt.submit(_close(pid))
        assert str(again.status) == "awaiting_approval"
        assert again.approval is not None and again.approval.id == first.approval.id
    assert _requests(rt) == 1  # before: one per submission
    # another run, or no key, still asks on its own (an approval never leaves its run)
    elsewhere = rt.submit(_close("p4", run="run:other"))
    assert elsewhere.approval is not None and elsewhere.approval.id != first.approval.id
    rt.decide_approval(first.approval.id, approver_id=APPROVER,
                        token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
    done = rt.submit(_close("p5"))
    assert str(done.status) == "executed" and done.replayed
    intents = [e for e in rt.journal.events(run_id="run:alice") if e.kind == "action.intent"]
    assert len(intents) == 1  # one effect
    # the same key with other arguments: refused, nothing runs
    other = rt.submit(_close("p6", account="acct-8"))
    assert str(other.status) == "denied"
    assert "idempotency_conflict" in (other.decision.reason_codes if other.decision else ())


def test_a_governed_session_asks_once(rt: Runtime) -> None:
    session = GovernedSession(rt, AGENT)
    meta = HostMeta(idempotency_key="close-9")
    first = session.call(CLOSE, {"account": "acct-9"}, meta)
    second = session.call(CLOSE, {"account": "acct-9"}, meta)
    assert first.status == second.status == "awaiting_approval"
    assert second.structured["approval_id"] == first.structured["approval_id"]
    assert _requests(rt) == 1
    # approved: what a waiting call (`mcp serve --approval-wait`) reads for the second call
    # is the key's one outcome, not a wait that never ends
    rt.decide_approval(first.structured["approval_id"], approver_id=APPROVER,
                       token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
    assert session.latest(second, CLOSE).status == "executed"


@pytest.mark.slow
def test_mcp_asks_once(tmp_path: Path) -> None:
    home = fresh(tmp_path, "home")
    for served in serve(home):
        client = Client(served.url, token_for(home, AGENT))
        try:
            meta = {"cradle-kg/idempotency_key": "close-9"}
            got = [client.call(CLOSE, {"account": "acct-9"}, meta)["result"]
                   for _ in range(3)]
        finally:
            client.close()
        ids = {g["structuredContent"]["approval_id"] for g in got}
        assert len(ids) == 1, got
        kinds = [e.kind for e in served.events()]
        assert kinds.count("approval.requested") == 1, kinds
