"""A call waiting for an approval ends when its token is revoked; it runs nothing after.

Finding (agent-facing doors review): ``mcp serve --approval-wait`` keeps a ``tools/call``
that needs an approval open, polling the journal, and when an approver has approved it,
runs the approved action itself and answers its output (``test_14`` holds that a revoked
token's *next* request is a 401). The operator revoked a compromised agent's token
(``cradle-kg api-token revoke``) while one of its calls waited; the approver, working the
inbox, approved the closure — and the waiting request, made with the revoked token, ran
``close_account`` in the server and handed the account's answer to the revoked client.

What must hold: a waiting call checks at each poll that the token it came with still
authenticates its agent; once it does not, the wait ends with a refusal, the server runs
nothing for it (the approval stays as the approver decided it, for whoever resumes the
run), and nothing is sent but that refusal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.home import Home
from cradle_kg.records import ApprovalStatus
from cradle_kg.server.auth import revoke_agent_token

from .mcp_http import AGENT, Client, Served, answer, serving_waits

pytest.importorskip("mcp")


@pytest.fixture
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serving_waits(tmp_path_factory.mktemp("mcp-wait"), "30", AGENT)


def _pending(served: Served) -> str:
    deadline = time.monotonic() + 20
    while True:
        with Runtime(served.home) as rt:
            waiting = [s.approval.id for s in rt.approvals.all()
                       if s.approval.status is ApprovalStatus.PENDING]
        if waiting:
            return waiting[0]
        assert time.monotonic() < deadline, "the call asked for no approval"
        time.sleep(0.1)


def test_a_revoked_token_s_waiting_call_runs_nothing(served: Served) -> None:
    client = Client(served.url, served.tokens[AGENT])
    got: dict[str, Any] = {}

    def close() -> None:
        got["answer"] = answer(client.post_json({
            "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
                "name": "demo.ledger.close_account", "arguments": {"account": "acct-2"},
                "_meta": {"progressToken": "p"}}}))

    waiting = threading.Thread(target=close)
    waiting.start()
    try:
        approval = _pending(served)
        assert revoke_agent_token(Home(served.home), AGENT)
        time.sleep(1.0)  # a few polls of the wait
        # decided where the tool cannot run (as for the proxy's upstream tools): the
        # waiting call is what would run it
        with Runtime(served.home, load_plugins=False, recover=False) as rt:
            assert not rt.tools.has("demo.ledger.close_account")
            rt.decide_approval(approval, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                               status=ApprovalStatus.APPROVED)
        waiting.join(timeout=40)
        assert not waiting.is_alive()
    finally:
        client.close()
    result = got["answer"]["result"]
    # before: "executed", {"account": "acct-2", "ok": true} — run by the server for the
    # revoked token, after its revocation
    assert result["isError"] is True, result
    assert result["_meta"]["cradle-kg/status"] == "refused", result
    assert "revoked" in result["content"][0]["text"] or "no longer" in result[
        "content"][0]["text"], result
    kinds = [e.kind for e in served.events()]
    assert "approval.decided" in kinds, kinds
    assert "action.intent" not in kinds, kinds
