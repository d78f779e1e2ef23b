"""A reusable approval that was used once could not be stopped.

Finding (verified in the nineteenth round, left): ``approvals approve --scope S`` without
``--until`` (the API: ``{"once": false}``) gives a reusable approval that never expires.
After its first use, ``approvals revoke`` was refused ``already_used`` (exit 2, HTTP 409),
and the same action proposed again in the run kept executing, no person asked: the
approver who learnt it was a mistake could only cancel the run or revoke the agent's
token.

Now a revoke of a used *reusable* approval is written: its further uses stop (the next
proposal asks a person anew), and the actions that ran under it before stay authorized
(the revoke says ``used``; the graph keeps ``cradle:Approved`` beside
``cradle:revokedAt``). A used approve-once is still ``already_used``: its one action
ran, nothing is left to stop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus, HumanApproval
from tests.inprocess import run_cli
from tests.security.homes import json_api

from .test_236_pending_key_asks_once import _close
from .test_284_approved_key_other_arguments import _intents, _unrun
from .test_304_revoke_an_approval import BOB, WHY, ran_under, revoke

pytestmark = pytest.mark.usefixtures("journal_backend")


def used_reusable(rt: Runtime, uses: int = 2, **how: Any) -> HumanApproval:
    """``close-9`` approved reusable (``--scope`` without ``--until``: never expires) and
    run at once, then proposed again under new keys (``uses`` in all): each ran under the
    approval, no person asked."""
    first = rt.submit(_close("p0", key="close-k0"))
    assert first.approval is not None
    _, out = rt.decide_approval(first.approval.id, approver_id=APPROVER,
                                token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                                once=False, scope=first.approval.scope, **how)
    assert out is not None and str(out.status) == "executed", out
    for n in range(1, uses):
        again = rt.submit(_close(f"p{n}", key=f"close-k{n}"))
        assert str(again.status) == "executed", again  # reused: no person asked
    assert len(_intents(rt)) == uses
    return first.approval


def asked_anew(rt: Runtime, approval: HumanApproval, n: int = 9) -> None:
    """The same action proposed again after the revoke: a person is asked (a new
    approval), nothing runs."""
    ran = len(_intents(rt))
    later = rt.submit(_close(f"p{n}", key=f"close-k{n}"))
    assert str(later.status) == "awaiting_approval", later  # before: executed
    assert later.approval is not None and later.approval.id != approval.id
    assert len(_intents(rt)) == ran


def test_a_used_reusable_approval_is_stopped_from_the_shell(tmp_path: Path) -> None:
    from .mcp_http import two_agent_home

    home = two_agent_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        approval = used_reusable(rt)
    env = {"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]}
    done = run_cli("approvals", "revoke", approval.id, "--as", APPROVER, "--reason", WHY,
                   "--home", str(home), env=env)
    assert done.returncode == 0, done.stderr  # before: exit 2, already_used
    said = " ".join(done.stdout.split())
    assert "after 2 uses" in said and "authorizes nothing more" in said, said
    with Runtime(home, graph_sync=False) as rt:
        asked_anew(rt, approval)
        assert rt.resume("run:alice") == [] and len(_intents(rt)) == 2
        assert _unrun(rt) == []
        assert rt.journal.verify().intact
    shown = json.loads(run_cli("approvals", "show", approval.id, "--home", str(home)).stdout)
    assert shown["approval"]["status"] == "revoked"
    assert shown["revoked"]["by"] == APPROVER and shown["revoked"]["uses"] == 2, shown
    listed = json.loads(run_cli("approvals", "list", "--format", "json", "--home",
                                str(home)).stdout)
    assert [(a["status"], a.get("revoked", {}).get("uses")) for a in listed] == [
        ("revoked", 2), ("pending", None)]
    table = run_cli("approvals", "list", "--home", str(home), env={"COLUMNS": "400"}).stdout
    assert "revoked by user:bob at" in table and " after 2 uses: " in table, table
    again = run_cli("approvals", "revoke", approval.id, "--as", APPROVER, "--reason", WHY,
                    "--home", str(home), env=env)
    assert again.returncode == 1 and "revoked" in again.stderr  # once


def test_a_used_reusable_approval_is_stopped_over_the_json_api(tmp_path: Path) -> None:
    from .mcp_http import two_agent_home

    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt, \
            json_api(rt) as client:
        approval = used_reusable(rt, uses=3)
        done = client.post(f"/api/approvals/{approval.id}/revoke", headers=BOB,
                           json={"reason": WHY})
        assert done.status_code == 200, done.text  # before: 409 already_used
        body = done.json()
        assert body["approval"]["status"] == "revoked"
        assert body["revoked"]["uses"] == 3 and body["revoked"]["reason"] == WHY
        seen = client.get(f"/api/approvals/{approval.id}", headers=BOB).json()
        assert seen["revoked"]["uses"] == 3
        asked_anew(rt, approval)
        assert rt.journal.verify().intact


def test_a_used_reusable_approval_with_an_expiry_is_stopped_too(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from .mcp_http import two_agent_home

    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        approval = used_reusable(rt, uses=1, until=datetime.now(UTC) + timedelta(days=30))
        done = revoke(rt, approval.id)
        assert done.status is ApprovalStatus.REVOKED
        asked_anew(rt, approval)


def test_a_used_approve_once_is_still_already_used(tmp_path: Path) -> None:
    """What is kept: an approve-once whose action ran has nothing left to stop — exit 2
    from the shell, 409 ``already_used`` over the API, nothing written but the refusal."""
    from .mcp_http import two_agent_home

    home = two_agent_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt, json_api(rt) as client:
        once = ran_under(rt)
        used = client.post(f"/api/approvals/{once}/revoke", headers=BOB, json={"reason": WHY})
        assert used.status_code == 409 and used.json()["detail"]["error"] == "already_used"
    env = {"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]}
    shell = run_cli("approvals", "revoke", once, "--as", APPROVER, "--reason", WHY,
                    "--home", str(home), env=env)
    assert shell.returncode == 2 and "already used" in shell.stderr, shell.stderr
    with Runtime(home, graph_sync=False) as rt:
        assert rt.approvals.get(once).approval.status is ApprovalStatus.APPROVED
        assert rt.journal.verify().intact
