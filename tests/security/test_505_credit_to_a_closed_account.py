"""Finding: ``demo.ledger.close_account`` closes an account "for good" — irreversible, a
person approves every execution — yet ``demo.ledger.credit`` went on writing to it: after
the approved closure of ``acct-505``, an agent's credit of 300 executed and gate 2 verified
it (the entry is in the ledger), so the closed account held money nobody had approved and
its balance kept moving.
Now the ledger refuses a credit to an account it records closed, in the transaction that
would write it (``ToolError``, nothing written): the credit fails, the closed account's
balance stays; credits to open accounts run as before. (Not a gate-1 validator: a new
validator's answer is journaled with every credit's decision, so journals recorded before it
would no longer replay strictly under this pack version — ``tests/workflow/test_golden.py``.)
"""

from __future__ import annotations

from pathlib import Path

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.loop.runtime import Runtime
from cradle_kg.packs.sdk import ToolError
from cradle_kg.records import ApprovalStatus, OutcomeStatus
from tests.conftest import proposal


def _ledger(rt: Runtime) -> object:
    from cradle_kg.packs.registry import PackRegistry

    pack = PackRegistry.discover(Path(rt.home.root)).get("demo.ledger")
    ledger_cls = pack.resolve("ledger:Ledger")
    return ledger_cls(Path(rt.home.root) / "demo-ledger" / "ledger.sqlite")


def test_a_closed_account_takes_no_credit(rt: Runtime) -> None:
    opened = rt.submit(proposal("p505-open", "demo.ledger.credit",
                                {"account": "acct-505", "amount": 5}))
    assert opened.status is OutcomeStatus.EXECUTED, opened.reasons
    waiting = rt.submit(proposal("p505-close", "demo.ledger.close_account",
                                 {"account": "acct-505"}))
    assert waiting.status is OutcomeStatus.AWAITING_APPROVAL and waiting.approval is not None
    _, closed = rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                                   token=DEMO_TOKENS[APPROVER],
                                   status=ApprovalStatus.APPROVED)
    assert closed is not None and closed.status is OutcomeStatus.EXECUTED, closed
    after = rt.submit(proposal("p505-credit", "demo.ledger.credit",
                               {"account": "acct-505", "amount": 300}))
    # before: OutcomeStatus.EXECUTED (verified: the entry was in the closed account)
    assert after.status is OutcomeStatus.FAILED, (after.status, after.reasons)
    assert any("is closed" in r for r in after.reasons), after.reasons
    ledger = _ledger(rt)
    assert ledger.balance("acct-505") == 5  # type: ignore[attr-defined]
    other = rt.submit(proposal("p505-other", "demo.ledger.credit",
                               {"account": "acct-505b", "amount": 300}))
    assert other.status is OutcomeStatus.EXECUTED, other.reasons


def test_the_ledger_refuses_a_credit_to_a_closed_account(rt: Runtime) -> None:
    ledger = _ledger(rt)
    ledger.close_account(key="k-close-505", account="acct-505c")  # type: ignore[attr-defined]
    try:
        ledger.credit(key="k-credit-505", account="acct-505c",  # type: ignore[attr-defined]
                      amount=7)
    except ToolError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("a credit to a closed account was written")
    assert ledger.entry("k-credit-505") is None  # type: ignore[attr-defined]
