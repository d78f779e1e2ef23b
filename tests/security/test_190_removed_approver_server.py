"""An approver removed from ``config.json`` decides nothing on a running server.

Finding (thirteenth attack review): approvers authenticate with the token whose hash is in
the home's ``config.json``, and there is no other way to take an approver's power away than
to remove them from the file (or replace their token's hash). The command line reads the
file at every command; a long-lived process — ``cradle-kg serve``'s JSON API and page,
``mcp serve`` — loaded it once at start. So after the operator removed Bob (he left; his
token leaked), Bob's token still approved over the running server: the irreversible
closure the ledger agent asked for was approved and the account closed, and his token
still read the closed graph (``--graph-readers approvers``). A token the operator replaced
kept working beside the new one. An agent's token, by contrast, is revoked at once
(``api-token revoke``: its file is read on each request).

Now the approvers are read from the file again whenever it changed (its inode, size and
times; otherwise from memory) — by the JSON API's authentication, by every decision
(approvals, human steps, tasks: ``ApprovalBook.approver``) and by the query workers
guarding the graph: a removed approver's token is a 401 at once (the approval still waits,
nothing runs), a replaced token too, and the new one decides. A file that no longer loads
admits no approver until it does (fail closed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.canonical import token_hash
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import ApprovalStatus, OutcomeStatus
from cradle_kg.server.launch import ServerSettings, graph_readers
from tests.security.homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")

NEW_TOKEN = "ck_bobs-new-token-after-the-leak"


def _close(pid: str, account: str) -> dict[str, object]:
    return {"id": pid, "task_id": "task-" + pid, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.close_account",
                       "target": f"ledger:{account}", "arguments": {"account": account}}}


def _edit_approvers(home: Path, *, token: str | None) -> None:
    """Remove Bob (``token`` None) or give him a new token, as the operator edits the file."""
    config = load_config(home / "config.json")
    approvers = tuple(a if a.id != APPROVER else a.model_copy(update={
        "token_hash": token_hash(token)}) for a in config.approvers
        if a.id != APPROVER or token is not None)
    save_config(home / "config.json", config.model_copy(update={"approvers": approvers}))


def _intents(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events() if e.kind == "action.intent")


def test_a_removed_approver_decides_nothing_on_the_api(ledger_home: Path) -> None:
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        bob = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
        assert client.get("/api/whoami", headers=bob).status_code == 200
        out = rt.submit(_close("p-close", "acct-3"))
        assert out.status is OutcomeStatus.AWAITING_APPROVAL and out.approval is not None

        _edit_approvers(ledger_home, token=None)  # the server keeps running
        answer = client.post(f"/api/approvals/{out.approval.id}/approve", headers=bob,
                             json={})
        assert answer.status_code == 401, answer.text  # before: 200, the account closed
        assert rt.approvals.get(out.approval.id).approval.status is ApprovalStatus.PENDING
        assert _intents(rt) == 0
        # in process too (the CLI's and a host's path): no longer a configured approver
        with pytest.raises(ApprovalError, match="not a configured approver"):
            rt.decide_approval(out.approval.id, approver_id=APPROVER,
                               token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)


def test_a_replaced_token_is_refused_and_the_new_one_decides(ledger_home: Path) -> None:
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        out = rt.submit(_close("p-close-2", "acct-4"))
        assert out.approval is not None
        _edit_approvers(ledger_home, token=NEW_TOKEN)
        old = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
        answer = client.post(f"/api/approvals/{out.approval.id}/approve", headers=old,
                             json={})
        assert answer.status_code == 401, answer.text  # before: 200
        new = {"Authorization": f"Bearer {NEW_TOKEN}"}
        answer = client.post(f"/api/approvals/{out.approval.id}/approve", headers=new,
                             json={})
        assert answer.status_code == 200, answer.text  # before: 403 until a restart
        assert answer.json()["outcome"]["status"] == "executed", answer.text
        # a file that no longer loads admits no approver (fail closed)
        (ledger_home / "config.json").write_text("{", encoding="utf-8")
        assert client.get("/api/whoami", headers=new).status_code == 401


def test_a_removed_approver_no_longer_reads_the_closed_graph(ledger_home: Path) -> None:
    with Runtime(ledger_home, graph_sync=False):
        pass
    readers = graph_readers(ServerSettings(home=ledger_home, graph_readers="approvers"))
    bob = f"Bearer {DEMO_TOKENS[APPROVER]}"
    assert readers.refusal(bob) is None
    _edit_approvers(ledger_home, token=None)
    assert readers.refusal(bob) is not None  # before: read on until a restart
    config = load_config(ledger_home / "config.json")
    assert all(readers.refusal(f"Bearer {DEMO_TOKENS[a.id]}") is None
               for a in config.approvers if a.id in DEMO_TOKENS)
