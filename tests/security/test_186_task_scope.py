"""An approver limited to scopes closes only the tasks of actions asked within them.

Finding (twelfth attack review, beside ``test_181``): closing a human task ends an
escalation — the run stops reading ``escalated`` and the task leaves every inbox
(``test_179``) — and an approver limited to scopes decides only what is asked within them
(``test_30``, ``test_170``, ``test_181``). But a task has no scope and any approver closed
any: Carol, trusted with account closures only, closed the ledger agent's escalation of a
credit it could not get right ("checked, all fine"), and would have closed any failed
verification of the home.

Now an approver limited to scopes closes a task only when it is about an action that ran
under an approval asked (or given) within one of their scopes — the aftermath of a decision
they are trusted with: the action's ``action.intent`` names the approval (one row), the
approval its scope. Any other task (an escalation of a proposal, an action no approval
covered) is for an approver holding ``*``. Refused: ``ApprovalError`` (403, ``error:`` on the
CLI), nothing journaled, the task still open.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime, VerifierReport, VerifyRequest
from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.records import ApprovalStatus, VerificationCheck, VerificationStatus
from tests.conftest import proposal

from .test_179_task_resolved_by_principal import _escalated

pytestmark = pytest.mark.usefixtures("journal_backend")

CAROL, DAVE = "user:carol", "user:dave"


def _home(home: Path) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers,
        Approver(id=CAROL, scopes=("account_closure",), token_hash=token_hash("carol")),
        Approver(id=DAVE, scopes=("payments",), token_hash=token_hash("dave")))}))


def _not_closed(req: VerifyRequest) -> VerifierReport:
    return VerifierReport(
        checks=(VerificationCheck(name="expected_state", status=VerificationStatus.FAILED,
                                  detail="the account still reads open"),),
        read_at=datetime.now(UTC), evidence={"read": "open"}, source="test")


def test_a_limited_approver_closes_only_the_tasks_of_their_scope(
        ledger_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        # an escalation of a proposal no approval covered: for `*` only
        task = _escalated(rt, "esc-c")
        before = rt.journal.head()
        with pytest.raises(ApprovalError, match="scope"):  # before: closed
            rt.resolve_task(task, by=CAROL, token="carol", note="checked, all fine")
        assert rt.journal.head() == before
        assert [t.id for t in open_tasks(rt.journal, run_id="run:esc-c")] == [task]
        assert rt.resolve_task(task, by=APPROVER, token=DEMO_TOKENS[APPROVER],
                               note="reconciled").resolved_by == APPROVER

        # a closure approved within `account_closure` whose verification failed
        # the world disagrees with the tool: its read says the account is still open
        monkeypatch.setitem(rt.verifiers._verifiers, "demo.ledger.account-closed",
                            _not_closed)
        out = rt.submit(proposal("close-1", "demo.ledger.close_account", {"account": "a9"},
                                 task_id="close-t", agent=AGENT))
        assert out.status is OutcomeStatus.AWAITING_APPROVAL and out.approval is not None
        _, done = rt.decide_approval(out.approval.id, approver_id=APPROVER,
                                     token=DEMO_TOKENS[APPROVER],
                                     status=ApprovalStatus.APPROVED)
        assert done is not None and done.status is not OutcomeStatus.EXECUTED, done
        [closure] = [t.id for t in open_tasks(rt.journal, run_id="run:close-t")]
        with pytest.raises(ApprovalError, match="scope"):
            rt.resolve_task(closure, by=DAVE, token="dave", note="fine")
        assert rt.resolve_task(closure, by=CAROL, token="carol",
                               note="closed it by hand").resolved_by == CAROL
