"""A cancelled workflow run's approved action ran when its proposal came again.

Finding (left open by ``test_286``): ``cradle-kg workflow cancel`` rejects the run's
approvals no person had decided yet — not one a person had already approved whose action
had not run (decided with ``resume=False``, from a process that does not hold the tool,
by a process that ended before the run: ``unrun_approvals``, ``test_284``). After the
cancel, the agent submitting that proposal again in the run (or ``runs resume``) ran the
action: gate 1 found the approval usable, and its consumption and the action's intent
were written after the run's end.

Now a proposal that uses an approval of a workflow run writes the approval's consumption
and its intent ``if_run_open``: the journal refuses the append under its writer's lock
once the run has ended, and the proposal is decided again knowing it — denied
``run_cancelled`` (``run_ended`` for a run that ended otherwise), the reasons naming who
cancelled it and why, journaled as a denial; nothing runs, nothing of the first decision
is written. A cancel landing while gate 1 weighs the proposal is refused the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Outcome, Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus, HumanApproval
from cradle_kg.workflow import runner
from cradle_kg.workflow.cancel import cancel
from tests.test_shell import CLOSE_FLOW

pytestmark = pytest.mark.usefixtures("journal_backend")

RUN = "close-9"
REASON = "the customer withdrew the request"
TOOL = "demo.ledger.close_account"


def waiting_close(rt: Runtime, run: str = RUN, account: str = "acct-9") -> HumanApproval:
    """A run of the ``close-account`` workflow (written into the home if it is not there)
    that waits for the approval of its tool step: that approval, pending."""
    flows = rt.home.root / "workflows"
    flows.mkdir(exist_ok=True)
    if not (flows / "close-account.yaml").exists():
        (flows / "close-account.yaml").write_text(CLOSE_FLOW, encoding="utf-8")
    started = runner.start(runner.open_engine(rt), runner.find_definition(
        rt.home.root, "close-account"), {"account": account}, run_id=run)
    assert started["status"] == "waiting_approval", started
    (pending,), _ = rt.approvals.pending_page(run_id=run, limit=10)
    return pending[0].approval


def _approved(home: Path, **decided: Any) -> HumanApproval:
    """``close-9`` waits for the approval of its tool step, which a person approves
    without running it (``resume=False``: recorded, the action left for its run);
    ``decided``: how (``once=False, until=T``: reusable until T)."""
    with Runtime(home, graph_sync=False) as rt:
        approval = waiting_close(rt)
        _, ran = rt.decide_approval(approval.id, approver_id=APPROVER,
                                    token=DEMO_TOKENS[APPROVER],
                                    status=ApprovalStatus.APPROVED, resume=False, **decided)
        assert ran is None and _kinds(rt, "action.intent") == 0
        return approval


def _cancel(rt: Runtime) -> dict[str, Any]:
    return cancel(rt, runner.open_engine(rt), RUN, by=APPROVER, token=DEMO_TOKENS[APPROVER],
                  reason=REASON)


def _kinds(rt: Runtime, kind: str) -> int:
    return sum(1 for e in rt.journal.events(run_id=RUN) if e.kind == kind)


def _denied_for_the_cancel(rt: Runtime, out: Outcome) -> None:
    assert str(out.status) == "denied", out  # before: executed, after the run's end
    assert out.decision is not None and "run_cancelled" in out.decision.reason_codes, out
    said = " ".join(out.decision.reasons)
    assert APPROVER in said and REASON in said, said
    # nothing ran: no consumption, no intent, no observation; the denial is journaled
    assert (_kinds(rt, "approval.consumed"), _kinds(rt, "action.intent")) == (0, 0)
    denials = [e for e in rt.journal.events(run_id=RUN) if e.kind == "decision.made"
               and e.payload["decision"]["verdict"] == "deny"]
    assert denials and "run_cancelled" in denials[-1].payload["decision"]["reason_codes"]
    assert rt.journal.verify().intact


#: an approve-once (its use consumes it) and one reusable until a time (nothing consumed)
HOW = {"once": {}, "until": {"once": False,
                             "until": datetime.now(UTC) + timedelta(hours=1)}}


@pytest.mark.parametrize("how", list(HOW))
def test_the_approved_proposal_again_after_the_cancel(ledger_home: Path, how: str) -> None:
    approval = _approved(ledger_home, **HOW[how])
    with Runtime(ledger_home, graph_sync=False) as rt:
        done = _cancel(rt)
        assert done["rejected_approvals"] == []  # it was decided already: approved
        out = rt.submit(rt.approvals.requested_proposal(approval))
        _denied_for_the_cancel(rt, out)
        # the same proposal once more: the recorded denial (its replay noted), nothing run
        head = rt.journal.head()[0]
        again = rt.submit(rt.approvals.requested_proposal(approval))
        assert str(again.status) == "denied", again
        assert [e.kind for e in rt.journal.events(run_id=RUN) if e.seq > head] == [
            "proposal.replayed"]
        assert _kinds(rt, "action.intent") == 0


def test_runs_resume_after_the_cancel(ledger_home: Path) -> None:
    """``runs resume`` (what re-submits a run's approved proposals) runs nothing either."""
    _approved(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        _cancel(rt)
        outcomes = rt.resume(RUN)
        assert outcomes, "the approval is still listed as approved"
        for out in outcomes:
            _denied_for_the_cancel(rt, out)


def test_a_cancel_landing_while_gate_1_weighs_it(ledger_home: Path) -> None:
    """The cancel written after the proposal's approval was read usable (a validator, as a
    pack registers one, holds gate 1 while it lands): its append is refused under the
    writer's lock, and the proposal decided again."""
    approval = _approved(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        landed: list[dict[str, Any]] = []

        def lands(proposal: Any, spec: Any) -> list[Any]:
            if not landed:
                landed.append(_cancel(rt))
            return []

        rt.register_validator(TOOL, lands, name="cancel-lands")
        out = rt.submit(rt.approvals.requested_proposal(approval))
        assert landed, "the validator ran"
        _denied_for_the_cancel(rt, out)


def test_an_approval_decided_and_run_racing_a_cancel(ledger_home: Path) -> None:
    """A person approves (``resume=True``: the action runs at once) while another cancels
    the run, in threads of one process, rounds staggered: whoever wins, no action's intent
    is written after the run's end. Before the guard, 30 rounds failed 4 runs of 4 (the
    approval's own resume ran the action for a run already cancelled)."""
    import time

    from tests.racers import at_once

    stagger = (0.0, 0.0, 0.001, 0.002, 0.004, 0.008)
    with Runtime(ledger_home, graph_sync=False) as rt:
        for r in range(30):
            run = f"close-race-{r}"
            waiting = waiting_close(rt, run, f"acct-r{r}")

            def approve(approval: HumanApproval = waiting) -> Any:
                return rt.decide_approval(approval.id, approver_id=APPROVER,
                                          token=DEMO_TOKENS[APPROVER],
                                          status=ApprovalStatus.APPROVED, resume=True)

            def cancel_later(run: str = run, delay: float = stagger[r % len(stagger)]) -> Any:
                time.sleep(delay)
                return cancel(rt, runner.open_engine(rt), run, by=APPROVER,
                              token=DEMO_TOKENS[APPROVER], reason=REASON)

            at_once(approve, cancel_later)
            events = list(rt.journal.events(run_id=run))
            ends = [e.seq for e in events if e.kind in ("workflow.completed",
                                                        "workflow.failed")]
            assert len(ends) == 1, ends  # one end, whoever won
            # (an action whose intent came first runs to its end: its observation may follow)
            late = [e.kind for e in events if e.seq > ends[0] and e.kind in (
                "approval.consumed", "action.intent")]
            assert not late, (r, late)
        assert rt.journal.verify().intact
