"""An approver limited to scopes is shown, and counted, only what they may decide.

Finding (left open by the twelfth attack review): since ``test_181`` and ``test_186`` an
approver limited to scopes decides only what is asked within one of them — an approval or
a human step by the scope it is asked within, a task by the scope of the approval its
action ran under; what is asked within no scope is for an approver holding ``*``. But the
inbox still listed everything to every approver: Carol (``account_closure`` only) was
shown, on the page, by ``GET /api/inbox`` and in ``/api/overview``'s count, a credit
awaiting a person, a workflow's review and another run's escalation — each with its
action, arguments and context — and every one of them was refused when she answered it;
the badge counted items she could never clear, and the closure waiting for her was one of
five. Dave (``payments``) was shown the same five and may decide none.

Now the inbox an approver reads (``/api/inbox``, ``/api/overview``'s ``inbox``, a run
view's ``inbox`` and ``inbox_total``; on the command line ``cradle-kg inbox --as WHO``)
holds, for an approver limited to scopes, only the items asked within one of them, paged
and counted alike; an approver holding ``*`` and the operator's ``cradle-kg inbox`` see
everything, as before.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Runtime, VerifierReport, VerifyRequest
from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus, VerificationCheck, VerificationStatus
from cradle_kg.workflow import runner
from tests.conftest import proposal
from tests.security.homes import json_api

from ..inprocess import run_cli
from .test_179_task_resolved_by_principal import _escalated
from .test_181_unscoped_limited_approver import BIG_CREDITS, FLOW, _credit

pytestmark = pytest.mark.usefixtures("journal_backend")

CAROL, DAVE = "user:carol", "user:dave"
TOKENS = {APPROVER: DEMO_TOKENS[APPROVER], CAROL: "carol", DAVE: "dave"}


def _home(home: Path) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers,
        Approver(id=CAROL, scopes=("account_closure",), token_hash=token_hash("carol")),
        Approver(id=DAVE, scopes=("payments",), token_hash=token_hash("dave")))}))
    (home / "policies" / "credits.cedar").write_text(BIG_CREDITS, encoding="utf-8")
    (home / "workflows").mkdir(exist_ok=True)
    (home / "workflows" / "credit-review.yaml").write_bytes(FLOW.read_bytes())


def _not_closed(req: VerifyRequest) -> VerifierReport:
    return VerifierReport(
        checks=(VerificationCheck(name="expected_state", status=VerificationStatus.FAILED,
                                  detail="the account still reads open"),),
        read_at=datetime.now(UTC), evidence={"read": "open"}, source="test")


def _close(pid: str, account: str) -> dict[str, Any]:
    return proposal(pid, "demo.ledger.close_account", {"account": account},
                    task_id="t-" + pid, agent=AGENT)


def _pending(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """One of each: an unscoped approval, a closure awaiting a person (`account_closure`),
    an unscoped step, an escalation no approval covered, and the task of a closure approved
    within `account_closure` whose verification failed."""
    credit = rt.submit(_credit("p-big"))
    assert credit.status is OutcomeStatus.AWAITING_APPROVAL and credit.approval is not None
    closure = rt.submit(_close("close-7", "a7"))
    assert closure.approval is not None and closure.approval.scope == "account_closure"
    started = runner.start(runner.open_engine(rt),
                           runner.find_definition(rt.home.root, "credit-review"),
                           {"account": "acct-5", "amount": 400, "reason": "refund"},
                           run_id="credit-u")
    assert started["status"] == "waiting_human", started
    escalation = _escalated(rt, "esc-c")
    monkeypatch.setitem(rt.verifiers._verifiers, "demo.ledger.account-closed", _not_closed)
    failed = rt.submit(_close("close-9", "a9"))
    assert failed.approval is not None
    _, done = rt.decide_approval(failed.approval.id, approver_id=APPROVER,
                                 token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
    assert done is not None and done.status is not OutcomeStatus.EXECUTED, done
    [task] = [i["id"] for i in _inbox_of(rt, None) if i["run_id"] == "run:t-close-9"]
    return {"credit": credit.approval.id, "closure": closure.approval.id,
            "step": "credit-u/review", "escalation": escalation, "task": task,
            "credit_run": credit.run_id}


def _inbox_of(rt: Runtime, who: str | None, **params: Any) -> list[dict[str, Any]]:
    with json_api(rt) as client:
        answer = client.get("/api/inbox", params=params, headers={
            "Authorization": f"Bearer {TOKENS[who or APPROVER]}"})
        assert answer.status_code == 200, answer.text
        return list(answer.json())


def _count(rt: Runtime, who: str) -> int:
    with json_api(rt) as client:
        answer = client.get("/api/overview",
                            headers={"Authorization": f"Bearer {TOKENS[who]}"})
        assert answer.status_code == 200, answer.text
        return int(answer.json()["inbox"])


def test_a_limited_approver_sees_only_what_they_may_decide(
        ledger_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        ids = _pending(rt, monkeypatch)
        everything = [ids[k] for k in ("credit", "closure", "step", "escalation", "task")]
        assert [i["id"] for i in _inbox_of(rt, APPROVER)] == everything
        assert _count(rt, APPROVER) == 5

        carols = [i["id"] for i in _inbox_of(rt, CAROL)]
        assert carols == [ids["closure"], ids["task"]]  # before: all five
        assert _count(rt, CAROL) == 2  # before: 5
        assert [i["id"] for i in _inbox_of(rt, CAROL, limit=1, offset=1)] == [ids["task"]]
        assert [i["id"] for i in _inbox_of(rt, CAROL, kind="approval")] == [ids["closure"]]
        assert _inbox_of(rt, DAVE) == [] and _count(rt, DAVE) == 0  # before: five, 5
        with json_api(rt) as client:  # the run view of the unscoped credit, as Carol
            view = client.get(f"/api/runs/{ids['credit_run']}/view",
                              headers={"Authorization": f"Bearer {TOKENS[CAROL]}"})
            assert view.status_code == 200, view.text
            assert view.json()["inbox"] == [] and view.json()["inbox_total"] == 0
            view = client.get(f"/api/runs/{ids['credit_run']}/view",
                              headers={"Authorization": f"Bearer {TOKENS[APPROVER]}"})
            assert [i["id"] for i in view.json()["inbox"]] == [ids["credit"]]

    # the command line: the operator's inbox is everything; `--as` an approver, theirs
    res = run_cli("inbox", "--format", "json", "--home", str(ledger_home))
    assert res.returncode == 0, res.stderr
    assert [i["id"] for i in json.loads(res.stdout)] == everything
    res = run_cli("inbox", "--as", CAROL, "--format", "json", "--home", str(ledger_home))
    assert res.returncode == 0, res.stderr
    assert [i["id"] for i in json.loads(res.stdout)] == [ids["closure"], ids["task"]]
    res = run_cli("inbox", "--as", CAROL, "--limit", "1", "--home", str(ledger_home))
    assert res.returncode == 0 and "1 to 1 of 2 items" in res.stderr, res.stderr
    res = run_cli("inbox", "--as", "user:nobody", "--home", str(ledger_home))
    assert res.returncode == 2 and "not an approver" in res.stderr, res.stderr
