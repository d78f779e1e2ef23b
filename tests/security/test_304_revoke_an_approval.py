"""An approval that was given could not be taken back before its action ran.

Finding: an approver who approved an action (an account closure) and then learnt it was
wrong — the agent's token leaked, the wrong account — had no way to withdraw the
approval. Approved where the tool is not held, with ``resume=False``, or by a process
that ended before the run, it stayed usable: the agent's next submission of the
proposal, ``runs resume`` or a workflow walk ran the action.

Now ``cradle-kg approvals revoke ID --as WHO --reason TEXT`` (``POST
/api/approvals/{id}/revoke``, an approver's token) takes it back: one
``approval.decided`` of status ``revoked``, by an approver who may decide the approval
(its exclusions, its scope), allowed only on an approved approval whose action has not
run under it. After it the approval authorizes nothing: the agent's proposal asks a
person anew (a new approval in the inbox), it no longer holds its key
(``unrun_approvals``), and every view says who revoked it, when and why.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, REQUESTER
from cradle_kg.errors import ApprovalError, ApprovalUsedError, InputError
from cradle_kg.records import ApprovalStatus, HumanApproval
from tests.inprocess import run_cli
from tests.security.homes import json_api

from .mcp_http import AGENT, token_for, two_agent_home
from .test_236_pending_key_asks_once import CLOSE, _close, _requests
from .test_284_approved_key_other_arguments import _conflict, _intents, _unrun

pytestmark = pytest.mark.usefixtures("journal_backend")

WHY = "the agent's token leaked: this closure was never asked for"
BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


@pytest.fixture
def keyed_home(tmp_path: Path) -> Path:
    return two_agent_home(tmp_path / "home")


def approved(rt: Runtime, **how: Any) -> HumanApproval:
    """``close-9``'s approval, approved and not run (``resume=False``: recorded, the
    action left for its next submission); ``how``: reusable ``once=False, until=T``."""
    first = rt.submit(_close("p1"))
    assert first.approval is not None
    rt.decide_approval(first.approval.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                       status=ApprovalStatus.APPROVED, resume=False, **how)
    assert _intents(rt) == []
    return first.approval


def ran_under(rt: Runtime) -> str:
    """An approval approved and run at once (``close-5``): its id."""
    ran = rt.submit(_close("p5", account="acct-5", key="close-5"))
    assert ran.approval is not None
    _, out = rt.decide_approval(ran.approval.id, approver_id=APPROVER,
                                token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
    assert out is not None and str(out.status) == "executed", out
    return ran.approval.id


def revoke(rt: Runtime, approval_id: str, who: str = APPROVER, reason: str = WHY
           ) -> HumanApproval:
    return rt.revoke_approval(approval_id, approver_id=who, token=DEMO_TOKENS[who],
                              reason=reason)


HOW = {"once": {}, "until": {"once": False, "until": datetime.now(UTC) + timedelta(hours=1)}}


@pytest.mark.parametrize("how", list(HOW))
def test_a_revoked_approval_authorizes_nothing(keyed_home: Path, how: str) -> None:
    with Runtime(keyed_home, graph_sync=False) as rt:
        approval = approved(rt, **HOW[how])
        assert _unrun(rt) == [approval.id]
        done = revoke(rt, approval.id)
        assert done.status is ApprovalStatus.REVOKED
        # the agent's same proposal again: a person is asked anew, nothing runs
        again = rt.submit(_close("p1"))
        assert str(again.status) == "awaiting_approval", again
        assert again.approval is not None and again.approval.id != approval.id
        assert _requests(rt) == 2 and _intents(rt) == []
        assert rt.resume("run:alice") == [] and _intents(rt) == []
        assert rt.approvals.get(approval.id).approval.status is ApprovalStatus.REVOKED
        assert rt.journal.verify().intact  # derived rows as the events derive them


def test_a_revoked_approval_no_longer_holds_its_key(keyed_home: Path) -> None:
    with Runtime(keyed_home, graph_sync=False) as rt:
        approval = approved(rt)
        assert _conflict(rt.submit(_close("p2", account="acct-8")))  # test_284
        revoke(rt, approval.id)
        assert _unrun(rt) == []
        other = rt.submit(_close("p3", account="acct-8"))
        assert str(other.status) == "awaiting_approval", other  # asks for its own
        assert rt.journal.verify().intact


def test_who_may_revoke_and_what(keyed_home: Path) -> None:
    with Runtime(keyed_home, graph_sync=False) as rt:
        approval = approved(rt)
        head = rt.journal.head()
        # the person the agent acts for: excluded from deciding it, so from revoking it
        with pytest.raises(ApprovalError, match="cannot"):
            revoke(rt, approval.id, who=REQUESTER)
        with pytest.raises(ApprovalError, match="token"):
            rt.revoke_approval(approval.id, approver_id=APPROVER, token="wrong", reason=WHY)
        with pytest.raises(InputError, match="reason"):
            revoke(rt, approval.id, reason="")
        # `revoked` is no decision (LangGraph's resume passes the status it is given)
        with pytest.raises(InputError, match="not a decision"):
            rt.decide_approval(approval.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                               status=ApprovalStatus.REVOKED)
        assert [e.kind for e in rt.journal.events() if e.seq > head[0]] == [
            "approval.refused", "approval.refused"]  # journaled as a refused decision
        # an approval no person decided yet: rejected, not revoked
        pending = rt.submit(_close("p9", account="acct-7", key="close-7"))
        assert pending.approval is not None
        with pytest.raises(ApprovalError, match="pending"):
            revoke(rt, pending.approval.id)
        rt.decide_approval(pending.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.REJECTED,
                           reason="no")
        with pytest.raises(ApprovalError, match="`rejected`: only an approved"):
            revoke(rt, pending.approval.id)
        revoke(rt, approval.id)
        with pytest.raises(ApprovalError, match="revoked"):  # once
            revoke(rt, approval.id)
        # one whose action ran: already used, nothing to take back
        with pytest.raises(ApprovalUsedError, match="already"):
            revoke(rt, ran_under(rt))
        assert rt.journal.verify().intact


def test_revoke_from_the_shell_and_its_views(keyed_home: Path) -> None:
    with Runtime(keyed_home, graph_sync=False) as rt:
        approval = approved(rt)
    home = str(keyed_home)
    env = {"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]}
    no = run_cli("approvals", "revoke", approval.id, "--as", APPROVER, "--home", home,
                 env=env)
    assert no.returncode == 2 and "reason" in no.stderr  # --reason is required
    done = run_cli("approvals", "revoke", approval.id, "--as", APPROVER, "--reason", WHY,
                   "--home", home, env=env)
    assert done.returncode == 0, done.stderr
    assert "revoked" in done.stdout and APPROVER in done.stdout
    again = run_cli("approvals", "revoke", approval.id, "--as", APPROVER, "--reason", WHY,
                    "--home", home, env=env)
    assert again.returncode == 1 and "revoked" in again.stderr
    shown = json.loads(run_cli("approvals", "show", approval.id, "--home", home).stdout)
    assert shown["approval"]["status"] == "revoked"
    assert shown["revoked"]["by"] == APPROVER and shown["revoked"]["reason"] == WHY
    assert shown["revoked"]["at"]
    [listed] = json.loads(run_cli("approvals", "list", "--format", "json", "--home",
                                  home).stdout)
    assert listed["status"] == "revoked" and listed["revoked"]["by"] == APPROVER
    table = run_cli("approvals", "list", "--home", home).stdout
    assert "revoked" in table
    # a reason is journaled as given and printed cleaned: no escape reaches the terminal
    with Runtime(keyed_home, graph_sync=False) as rt:
        other = rt.submit(_close("p8", account="acct-8", key="close-8"))
        assert other.approval is not None
        rt.decide_approval(other.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                           resume=False)
        revoke(rt, other.approval.id, reason="\x1b[31mred\x1b[0m\nsecond line")
    listed_table = run_cli("approvals", "list", "--home", home).stdout
    assert "\x1b" not in listed_table and "red" in listed_table


def test_revoke_over_the_json_api(keyed_home: Path) -> None:
    agent = {"Authorization": f"Bearer {token_for(keyed_home, AGENT)}"}
    with Runtime(keyed_home, graph_sync=False) as rt, json_api(rt) as client:
        approval = approved(rt)
        url = f"/api/approvals/{approval.id}/revoke"
        head = rt.journal.head()
        mine = client.post(url, headers=agent, json={"reason": "mine now"})
        assert mine.status_code == 403, mine.text  # an agent's token: not a person's
        assert client.post(url, headers=BOB, json={}).status_code == 422  # no reason
        assert rt.journal.head() == head
        done = client.post(url, headers=BOB, json={"reason": WHY})
        assert done.status_code == 200, done.text
        body = done.json()
        assert body["approval"]["status"] == "revoked"
        assert body["revoked"]["by"] == APPROVER and body["revoked"]["reason"] == WHY
        seen = client.get(f"/api/approvals/{approval.id}", headers=BOB).json()
        assert seen["approval"]["status"] == "revoked" and seen["revoked"]["by"] == APPROVER
        twice = client.post(url, headers=BOB, json={"reason": WHY})
        assert twice.status_code == 403, twice.text
        # one whose action ran: 409 already_used
        used = client.post(f"/api/approvals/{ran_under(rt)}/revoke", headers=BOB,
                           json={"reason": WHY})
        assert used.status_code == 409 and used.json()["detail"]["error"] == "already_used"


def test_a_call_waiting_on_a_revoked_approval_stops_waiting(keyed_home: Path) -> None:
    """What ``mcp serve --approval-wait`` polls (``GovernedSession.latest``): a call that
    waits on an approval a person revoked is answered, refused, saying who and why —
    before, it read ``awaiting_approval`` until its wait timed out, on an approval no
    one would decide again. Called again, it asks a person anew."""
    from cradle_kg.integrations.calls import GovernedSession, HostMeta

    with Runtime(keyed_home, graph_sync=False) as rt:
        session = GovernedSession(rt, AGENT)
        meta = HostMeta(idempotency_key="close-9")
        waiting = session.call(CLOSE, {"account": "acct-9"}, meta)
        assert waiting.status == "awaiting_approval"
        approval_id = waiting.structured["approval_id"]
        rt.decide_approval(approval_id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                           status=ApprovalStatus.APPROVED, resume=False)
        revoke(rt, approval_id)
        polled = session.latest(waiting, CLOSE)
        assert polled.status == "refused", polled  # before: awaiting_approval
        assert APPROVER in polled.text and WHY in polled.text
        again = session.call(CLOSE, {"account": "acct-9"}, meta)
        assert again.status == "awaiting_approval"
        assert again.structured["approval_id"] != approval_id
        assert _intents(rt) == []


def test_an_approver_outside_the_scope_may_not_revoke(keyed_home: Path) -> None:
    """Carol may decide only within `refunds`: the closure's approval (asked within
    `account_closure`) is not hers to decide, nor to take back."""
    config = load_config(keyed_home / "config.json")
    save_config(keyed_home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers, Approver(id="user:carol", scopes=("refunds",),
                                    token_hash=token_hash("carol-token")))}))
    with Runtime(keyed_home, graph_sync=False) as rt:
        approval = approved(rt)
        with pytest.raises(ApprovalError, match="scope"):
            rt.revoke_approval(approval.id, approver_id="user:carol", token="carol-token",
                               reason=WHY)
        assert rt.approvals.get(approval.id).approval.status is ApprovalStatus.APPROVED
        assert _unrun(rt) == [approval.id]


def test_revoked_after_its_run_was_cancelled(ledger_home: Path) -> None:
    """A cancel leaves an approved, unrun approval as it is (``test_297``); a person may
    still revoke it: the revoke is no event of the run's walk (not ``if_run_open``)."""
    from .test_297_cancelled_run_approved_action import _approved, _cancel

    approval = _approved(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        _cancel(rt)
        assert rt.approvals.get(approval.id).approval.status is ApprovalStatus.APPROVED
        revoke(rt, approval.id)
        assert rt.approvals.get(approval.id).approval.status is ApprovalStatus.REVOKED
        assert rt.journal.verify().intact
