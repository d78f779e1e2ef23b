"""A new approval asked for in a workflow run after a person cancelled it.

Finding (noticed by ``test_297``'s work): after ``cradle-kg workflow cancel``, the run's
agent could still propose, in that run, an action a policy puts before a person: the
request was written into the ended run (``approval.requested`` after its
``workflow.failed``), counted in the agent's ``waiting_per_agent`` and put in the inbox —
an approver was asked about a run that had ended. (Its use was refused since
``test_297``: the approval covered nothing, but the person was still asked.)

Now a request for an approval is written ``if_run_open`` as its use is: the journal
refuses the append under its writer's lock once the run has ended, and the proposal is
decided again knowing it — denied ``run_cancelled`` (``run_ended`` for a run that ended
otherwise), the reason naming who cancelled it and why; nothing waits, no one is asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from tests.security.test_297_cancelled_run_approved_action import (
    REASON,
    RUN,
    _cancel,
    _kinds,
    waiting_close,
)

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_a_new_approval_is_not_asked_in_a_cancelled_run(ledger_home: Path) -> None:
    with Runtime(ledger_home, graph_sync=False) as rt:
        pending = waiting_close(rt)
        asked = rt.approvals.requested_proposal(pending)
        done = _cancel(rt)
        assert done["rejected_approvals"] == [pending.id]
        agent = asked.agent_id
        waiting = rt.journal.waiting(agent)
        requests = _kinds(rt, "approval.requested")
        end = max(e.seq for e in rt.journal.events(run_id=RUN) if e.kind == "workflow.failed")
        # the agent, in the run it no longer has, asks to close another account
        other = asked.model_copy(update={
            "id": asked.id + "-again",
            "action": asked.action.model_copy(update={
                "target": "ledger:acct-8", "arguments": {"account": "acct-8"},
                "idempotency_key": None})})
        out = rt.submit(other)
        assert str(out.status) == "denied", out  # before: awaiting_approval, asked anew
        assert out.decision is not None and "run_cancelled" in out.decision.reason_codes
        said = " ".join(out.decision.reasons)
        assert REASON in said, said
        assert _kinds(rt, "approval.requested") == requests  # no one asked
        assert rt.journal.waiting(agent) == waiting
        assert not [e.kind for e in rt.journal.events(run_id=RUN) if e.seq > end
                    and e.kind in ("approval.requested", "approval.consumed", "action.intent")]
        pending_now, _ = rt.approvals.pending_page(limit=10)
        assert pending_now == []
        assert rt.journal.verify().intact
