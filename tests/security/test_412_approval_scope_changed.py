"""An approval covers its action within the scope it was asked within, no other.

Finding (twenty-third review, the human doors): an approval is asked within the scope the
policies that ask for it name (``@approval_scope``), and only an approver holding that
scope (or ``*``) may decide it (``tests/security/test_181``, ``test_188``). But once
given, it was used for its action's digest whatever scope the policies asked within
*now*. The operator moves credits to closing accounts from the closures desk
(``account_closure``: Carol) to the treasury (``treasury``) during an incident — the
running server reads the new policies at the next call (``test_200``) — and the reusable
approval Carol gave the day before, within ``account_closure``, went on crediting
``closing-7``: an action the policies now send to the treasury ran on the word of an
approver who may not decide it. Likewise a desk's approval once the policies send the
action to an approver holding ``*`` (no scope).

Now: an approval covers the action only while the policies ask within the scope it was
asked within (``ApprovalBook.usable``, as it covers only the tool's version it was asked
under: ``test_146``); asked within another, the action asks a person again, within the
scope now, and the reasons say which approval covered which scope.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import ApprovalStatus, OutcomeStatus

from .homes import replace_file

pytestmark = pytest.mark.usefixtures("journal_backend")

CAROL, TREASURER = "user:carol", "user:tess"
DESK = """
@id("closing-accounts-desk")
@requires_approval("true")
{scope}permit(principal, action, resource)
when {{ context.tool like "demo.ledger.*" && context.arguments has account
       && context.arguments.account like "closing-*" }};
"""


def _policy(home: Path, scope: str | None) -> None:
    line = f'@approval_scope("{scope}")\n' if scope else ""
    replace_file(home / "policies" / "desk.cedar", DESK.format(scope=line))


def _home(home: Path) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers,
        Approver(id=CAROL, scopes=("account_closure",), token_hash=token_hash("carol")),
        Approver(id=TREASURER, scopes=("treasury",), token_hash=token_hash("tess")))}))
    _policy(home, "account_closure")


def _credit(pid: str, step: int) -> dict[str, object]:
    return {"id": pid, "task_id": "task-closing", "agent_id": AGENT, "run_id": "r-closing",
            "step": step,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:closing-7",
                       "arguments": {"account": "closing-7", "amount": 100}}}


def _intents(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events(run_id="r-closing") if e.kind == "action.intent")


@pytest.mark.parametrize("now_asked_within", ["treasury", None])
def test_an_approval_covers_only_the_scope_it_was_asked_within(
        ledger_home: Path, now_asked_within: str | None) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        first = rt.submit(_credit("p-1", 1))
        assert first.status is OutcomeStatus.AWAITING_APPROVAL and first.approval is not None
        assert first.approval.scope == "account_closure"
        # Carol's reusable approval within her desk: the credit runs, and may run again
        _, done = rt.decide_approval(first.approval.id, approver_id=CAROL, token="carol",
                                     status=ApprovalStatus.APPROVED, once=False,
                                     scope="account_closure",
                                     until=rt.clock() + timedelta(days=1))
        assert done is not None and done.status is OutcomeStatus.EXECUTED
        again = rt.submit(_credit("p-2", 2))
        assert again.status is OutcomeStatus.EXECUTED  # the same scope: covered, as before
        assert _intents(rt) == 2

        # the incident: the policies send these credits elsewhere now
        _policy(ledger_home, now_asked_within)
        third = rt.submit(_credit("p-3", 3))
        assert third.status is OutcomeStatus.AWAITING_APPROVAL, third.reasons  # before: executed
        assert _intents(rt) == 2
        assert third.approval is not None and third.approval.id != first.approval.id
        assert third.approval.scope == now_asked_within
        assert any(first.approval.id in r and "account_closure" in r for r in third.reasons)
        # the desk the policies name now decides it, and the credit runs
        who, token = ((TREASURER, "tess") if now_asked_within
                      else (APPROVER, DEMO_TOKENS[APPROVER]))  # `*`
        _, done = rt.decide_approval(third.approval.id, approver_id=who, token=token,
                                     status=ApprovalStatus.APPROVED)
        assert done is not None and done.status is OutcomeStatus.EXECUTED
        assert _intents(rt) == 3


def test_an_approval_asked_within_no_scope_stays_reusable_within_the_one_given(
        ledger_home: Path) -> None:
    """A `*` approver's reusable approval `--scope S` of an action asked within no scope
    keeps covering it while the policies still ask within none."""
    _home(ledger_home)
    _policy(ledger_home, None)
    with Runtime(ledger_home, graph_sync=False) as rt:
        first = rt.submit(_credit("p-1", 1))
        assert first.approval is not None and first.approval.scope is None
        _, done = rt.decide_approval(first.approval.id, approver_id=APPROVER,
                                     token=DEMO_TOKENS[APPROVER],
                                     status=ApprovalStatus.APPROVED, once=False,
                                     scope="payments")
        assert done is not None and done.status is OutcomeStatus.EXECUTED
        assert rt.submit(_credit("p-2", 2)).status is OutcomeStatus.EXECUTED
        assert _intents(rt) == 2
