"""Finding: strict replay copied, unchecked, the outcome a person's rejection wrote.

A person's rejection of an approval (``approvals reject``, or a cancel of its workflow
run) writes their ``approval.decided`` and, in the same append, the ``run.outcome`` that
ends the waiting proposal (``denied``, or ``repair`` for changes requested). Since
``test_300`` the replay takes that outcome for an input — copied as recorded, never
derived again — recognising it by its shape alone: a ``run.outcome`` right after the
decision, at the same time, whose ``approval`` names the decision's id, status and
approver. What the outcome *says* was not looked at. Handed a journal (its author writes
every byte and may recompute every hash with the public code: *A journal handed to an
auditor*) whose rejected closure's outcome reads ``executed`` — reasons and all — ``replay
--strict`` answered "reproduced exactly" (exit 0): the auditor is told the code wrote an
outcome it never writes, for an action a person refused.

Now the replay derives that outcome again from the copied decision, through the code that
writes it (``approval_flow.decided_events``), and compares it hash for hash: the forged
outcome diverges, naming its seq; the journal as written replays as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.records import ApprovalStatus, AuditEvent, OutcomeStatus, Proposal
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli
from tests.security.handed import rechained

BOB = DEMO_TOKENS[APPROVER]
CLOSE = {"id": "p-close", "task_id": "t-close", "agent_id": "agent:ledger-assistant",
         "run_id": "run-close",
         "action": {"action_type": "demo.ledger.close_account", "target": "ledger:acct-9",
                    "arguments": {"account": "acct-9"}}}


def _rejected_closure(home: Path, status: ApprovalStatus) -> None:
    from cradle_kg.demo.scenario import prepare_home

    prepare_home(home)
    with Runtime(home, graph_sync=False) as rt:
        out = rt.submit(Proposal.model_validate(CLOSE))
        assert out.status is OutcomeStatus.AWAITING_APPROVAL, out
        (request,), _ = rt.journal.approval_requests(undecided=True, run_id="run-close")
        rt.decide_approval(request.payload["approval"]["id"], approver_id=APPROVER, token=BOB,
                           reason="keep it open", status=status)


def _rewritten(home: Path, into: Path, *, executed: bool) -> int:
    """``home`` copied to ``into`` by its author (:func:`rechained`), the rejection's
    outcome made ``executed`` when ``executed``. Returns the seq of that outcome."""
    forged = 0

    def rewrite(before: AuditEvent | None, ev: AuditEvent) -> tuple[str, dict[str, Any]]:
        nonlocal forged
        payload = ev.payload
        if ev.kind == "run.outcome" and before is not None and before.kind == "approval.decided":
            forged = ev.seq
            if executed:
                payload = {**payload, "outcome": {**payload["outcome"], "status": "executed",
                                                  "reasons": ["approved and executed"]}}
        return ev.subject, payload

    rechained(home, into, rewrite)
    assert forged, "the rejection wrote no outcome after its decision"
    return forged


@pytest.mark.parametrize("status", [ApprovalStatus.REJECTED, ApprovalStatus.CHANGES_REQUESTED])
def test_a_forged_outcome_of_a_rejection_does_not_replay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: ApprovalStatus) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)  # a handed home: its own file
    home = tmp_path / "home"
    _rejected_closure(home, status)
    # the journal as written, and as copied by its author unchanged, replay exactly
    assert strict_replay(home).runs == ["run-close"]
    _rewritten(home, tmp_path / "same", executed=False)
    assert strict_replay(tmp_path / "same").runs == ["run-close"]

    seq = _rewritten(home, tmp_path / "forged", executed=True)
    with pytest.raises(ReplayDivergenceError) as caught:  # before: "reproduced exactly"
        strict_replay(tmp_path / "forged")
    assert caught.value.seq == seq, caught.value.message
    assert "outcome" in caught.value.message, caught.value.message
    cli = run_cli("replay", "--strict", "--home", str(tmp_path / "forged"))
    assert cli.returncode == 1, cli.stdout + cli.stderr
