"""An agent re-submitting under its key cannot close a person's pending approval.

Finding (twenty-fifth review, the review of the round's own changes): ``test_516`` made a
proposal waiting on an approval asked within a scope the policies no longer name ask anew
and close the old approval (``approval.decided`` expired, by the runtime). The scope was
compared as the *new proposal* gets it — and a proposal's scope depends on what the agent
writes in it beyond the action (its declared risk, its task, its evidence: none in the
action's digest). With the policies unchanged (credits to closing accounts to the closures
desk; a high declared risk to the treasury too, so to an approver holding ``*``), the
agent, calling again under its key with ``risk_level: high``, closed the closures desk's
pending approval — Carol's decision of it was then refused — and asked anew; calling
again with ``low`` closed that one too: every call cancelled the person's pending
approval and put another in the inbox, as often as the agent liked.

Now: a pending approval is closed only when the *policies* moved it — the policy set the
proposal is decided under now is not the one it was asked under (the request records its
policy set's version). With the policies unchanged the proposal waits on it, as before
``test_516`` (its approval then covers only a proposal asked within its scope:
``test_412``). Both journals.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import ApprovalStatus, OutcomeStatus

from .homes import replace_file
from .test_412_approval_scope_changed import CAROL, _credit, _home, _intents

pytestmark = pytest.mark.usefixtures("journal_backend")

HIGH = """
@id("high-risk-to-anyone")
@requires_approval("true")
@approval_scope("treasury")
permit(principal, action, resource)
when { context.tool like "demo.ledger.*" && context.declared_risk == "high" };
"""


def _keyed(pid: str, risk: str) -> dict[str, object]:
    proposal = _credit(pid, 1)
    action = proposal["action"]
    assert isinstance(action, dict)
    action.update(idempotency_key="k-closing", risk_level=risk)
    return proposal


def test_a_declared_risk_flip_does_not_close_the_desks_approval(ledger_home: Path) -> None:
    _home(ledger_home)
    replace_file(ledger_home / "policies" / "high.cedar", HIGH)
    with Runtime(ledger_home, graph_sync=False) as rt:
        first = rt.submit(_keyed("p-1", "low"))
        assert first.status is OutcomeStatus.AWAITING_APPROVAL and first.approval is not None
        old = first.approval.id
        assert first.approval.scope == "account_closure"

        for n, risk in enumerate(("high", "low", "high", "low"), start=2):
            again = rt.submit(_keyed(f"p-{n}", risk))
            assert again.status is OutcomeStatus.AWAITING_APPROVAL, again
            assert again.approval is not None
            # before: a new approval each time, the one before closed by the runtime
            assert again.approval.id == old, again.reasons

        assert rt.approvals.get(old).approval.status is ApprovalStatus.PENDING
        rows, _ = rt.approvals.pending_page()
        assert [st.approval.id for st, _ in rows] == [old]
        # the closures desk decides it, as it was asked to
        approved, done = rt.decide_approval(old, approver_id=CAROL, token="carol",
                                            status=ApprovalStatus.APPROVED)
        assert approved.status is ApprovalStatus.APPROVED
        assert done is not None and done.status is OutcomeStatus.EXECUTED, done
        assert _intents(rt) == 1
        assert rt.journal.verify(semantics=True).intact
