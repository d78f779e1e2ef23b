"""A key whose approval waits is no way to ask for another action.

Finding (left open by ``test_236``): a proposal under an idempotency key with the same
arguments while the key's approval waits is answered with that approval, but one with
*other* arguments opened an approval request of its own — the approvers were asked about
two different actions under one key (the agent closing ``acct-9`` and ``acct-8`` under
``close-9``, whichever a person approved first ran; the other then denied). Once the key's
action has run, other arguments under it are denied (``idempotency_conflict``).

Now the pending case is the same: other arguments under a key (the agent's, for the same
tool) whose approval no person decided yet are denied ``idempotency_conflict``, journaled
as the executed case journals it, and nobody is asked. Found in the query of the derived
``undecided_approvals`` (the agent's, under the key, for the tool).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Outcome, Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.integrations.calls import GovernedSession, HostMeta
from cradle_kg.records import ApprovalStatus

from .mcp_http import AGENT, two_agent_home
from .test_236_pending_key_asks_once import CLOSE, _close, _requests

pytestmark = pytest.mark.usefixtures("journal_backend")

@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with Runtime(two_agent_home(tmp_path / "home")) as runtime:
        yield runtime


def _submitted(rt: Runtime, proposal: dict[str, Any]) -> tuple[Outcome, list[str]]:
    """The outcome and the kinds of the events the submission journaled."""
    before = max(e.seq for e in rt.journal.events())
    out = rt.submit(proposal)
    return out, [e.kind for e in rt.journal.events() if e.seq > before]


def _conflict(out: Outcome) -> bool:
    return (str(out.status) == "denied" and out.decision is not None
            and "idempotency_conflict" in out.decision.reason_codes)


def test_other_arguments_under_a_waiting_key_are_refused(rt: Runtime) -> None:
    first = rt.submit(_close("p1"))
    assert str(first.status) == "awaiting_approval" and first.approval is not None
    other, pending_kinds = _submitted(rt, _close("p2", account="acct-8"))
    assert _conflict(other), other  # before: awaiting_approval, a request of its own
    assert _requests(rt) == 1
    # in another run of the agent too: the key is the agent's for the tool, not the run's
    assert _conflict(rt.submit(_close("p3", account="acct-7", run="run:other")))
    # the same arguments still read the waiting approval (test_236)
    again = rt.submit(_close("p4"))
    assert again.approval is not None and again.approval.id == first.approval.id
    assert _requests(rt) == 1
    # journaled as the executed case journals its conflict
    rt.decide_approval(first.approval.id, approver_id=APPROVER,
                       token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
    after, executed_kinds = _submitted(rt, _close("p5", account="acct-8"))
    assert _conflict(after)
    assert pending_kinds == executed_kinds, (pending_kinds, executed_kinds)
    intents = [e for e in rt.journal.events() if e.kind == "action.intent"]
    assert [e.payload["input_hash"] for e in intents] == [first.approval.action_digest]


def test_a_governed_session_is_refused_too(rt: Runtime) -> None:
    session = GovernedSession(rt, AGENT)
    meta = HostMeta(idempotency_key="close-9")
    assert session.call(CLOSE, {"account": "acct-9"}, meta).status == "awaiting_approval"
    other = session.call(CLOSE, {"account": "acct-8"}, meta)
    assert other.status == "denied", other.structured  # before: awaiting_approval
    assert _requests(rt) == 1
