"""An approval two policies ask for is asked within the scope both name, or within none.

Finding (thirteenth attack review): gate 1 asks for a person when any permit policy that
decides the request says ``@requires_approval("true")``, and asked within the
``@approval_scope`` of the *first* determining policy (by id) that names one — whether or
not that policy asked for the approval, and whatever the others asked. Since ``test_181``
an approval asked within no scope is for an approver holding ``*``, and one asked within a
scope for whoever holds it. So an action two policies catch was decided by the laxer
reviewer: the operator sends credits above 500 to a person (no scope: an approver holding
``*``), and any ledger call on a ``closing-…`` account to the closures desk
(``account_closure``). The ledger agent credited 800 to ``closing-7``: the approval was
asked within ``account_closure``, Carol (trusted with account closures only) approved it,
and the credit was made — what ``test_181`` refused her for the same credit to an
ordinary account. With two scopes (``payments`` and ``account_closure``), whichever
policy id sorts first chose the desk, and the other desk was never asked.

Now the approval's scope is read from the policies that ask for the approval only: when
they all name one scope, it is that scope; when one of them names none, or they name
different scopes, it is asked within no scope — for an approver holding ``*``. An action
one scoped policy sends to a person is asked within its scope as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import ApprovalStatus, OutcomeStatus

pytestmark = pytest.mark.usefixtures("journal_backend")

CAROL, DAVE = "user:carol", "user:dave"
CLOSING_DESK = """
@id("closing-accounts-desk")
@requires_approval("true")
@approval_scope("account_closure")
permit(principal, action, resource)
when { context.tool like "demo.ledger.*" && context.arguments has account
       && context.arguments.account like "closing-*" };
"""
BIG_CREDITS = """
@id("big-credits-need-a-person")
@requires_approval("true")
{scope}permit(principal, action == Action::"demo.ledger.credit", resource)
when {{ context.environment == "local" && context.arguments has amount
       && context.arguments.amount > 500 }};
"""


def _home(home: Path, big_credits_scope: str | None) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers,
        Approver(id=CAROL, scopes=("account_closure",), token_hash=token_hash("carol")),
        Approver(id=DAVE, scopes=("payments",), token_hash=token_hash("dave")))}))
    scope = f'@approval_scope("{big_credits_scope}")\n' if big_credits_scope else ""
    (home / "policies" / "desks.cedar").write_text(
        CLOSING_DESK + BIG_CREDITS.format(scope=scope), encoding="utf-8")


def _credit(pid: str, account: str, amount: int) -> dict[str, object]:
    return {"id": pid, "task_id": "task-" + pid, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.credit", "target": f"ledger:{account}",
                       "arguments": {"account": account, "amount": amount}}}


def _intents(rt: Runtime, run: str) -> int:
    return sum(1 for e in rt.journal.events(run_id=run) if e.kind == "action.intent")


@pytest.mark.parametrize("big_credits_scope", [None, "payments"])
def test_the_laxer_desk_does_not_decide_what_two_policies_ask(ledger_home: Path,
                                                              big_credits_scope: str | None
                                                              ) -> None:
    _home(ledger_home, big_credits_scope)
    with Runtime(ledger_home, graph_sync=False) as rt:
        out = rt.submit(_credit("p-closing", "closing-7", 800))
        assert out.status is OutcomeStatus.AWAITING_APPROVAL and out.approval is not None
        assert out.approval.scope is None  # before: account_closure
        for who, token in ((CAROL, "carol"), (DAVE, "dave")):
            with pytest.raises(ApprovalError):  # before: Carol's approval executed it
                rt.decide_approval(out.approval.id, approver_id=who, token=token,
                                   status=ApprovalStatus.APPROVED)
        assert rt.approvals.get(out.approval.id).approval.status is ApprovalStatus.PENDING
        assert _intents(rt, out.run_id) == 0
        _, done = rt.decide_approval(out.approval.id, approver_id=APPROVER,
                                     token=DEMO_TOKENS[APPROVER],
                                     status=ApprovalStatus.APPROVED)
        assert done is not None and done.status is OutcomeStatus.EXECUTED


def test_one_scoped_policy_still_names_its_desk(ledger_home: Path) -> None:
    _home(ledger_home, "payments")
    with Runtime(ledger_home, graph_sync=False) as rt:
        # only the closing desk's policy asks: its scope, and Carol decides
        small = rt.submit(_credit("p-small", "closing-8", 100))
        assert small.approval is not None and small.approval.scope == "account_closure"
        _, done = rt.decide_approval(small.approval.id, approver_id=CAROL, token="carol",
                                     status=ApprovalStatus.APPROVED)
        assert done is not None and done.status is OutcomeStatus.EXECUTED
        # only the payments policy asks: its scope, and Dave decides
        big = rt.submit(_credit("p-big", "acct-9", 800))
        assert big.approval is not None and big.approval.scope == "payments"
        _, done = rt.decide_approval(big.approval.id, approver_id=DAVE, token="dave",
                                     status=ApprovalStatus.APPROVED)
        assert done is not None and done.status is OutcomeStatus.EXECUTED
        # the demo's closure policy: its scope, as before
        close = rt.submit({"id": "p-close", "task_id": "task-close", "agent_id": AGENT,
                           "action": {"action_type": "demo.ledger.close_account",
                                      "target": "ledger:acct-3",
                                      "arguments": {"account": "acct-3"}}})
        assert close.approval is not None and close.approval.scope == "account_closure"
