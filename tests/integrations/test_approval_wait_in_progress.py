"""A waiting call that polls while the approver's own resume is still running the tool.

Found by a fresh-clone CI run (twenty-third round) in
``test_mcp_stdio::test_approval_wait_streams_progress_until_the_decision``, where it
depended on timing: the approver decided from another process, which resumed the run and
called the tool; the waiting ``mcp serve --approval-wait`` call polled at that moment,
resumed the same approval, found the key's action running elsewhere (``in_progress``) and
ended its wait with that — the client was told neither the outcome nor to wait on.

Here the interleaving is made certain, not likely: the approver approves (from a second
``Runtime`` on the same home, as the CLI or the web page would be) without resuming; the
waiting session's poll finds the approval approved and usable, and just before it submits,
the approver's process resumes the run and its tool holds mid-call until the test lets it go.
(Holding the approver's tool alone is not enough: its intent consumes the approval, and a
poll after that reads the approval used and resumes nothing.)

What must hold: a poll during the other process's run still reads "awaiting approval" (no
outcome yet, no second intent, the tool not called again); the poll after the tool answered
reads ``executed``, one effect.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.integrations.calls import GovernedSession, HostMeta
from cradle_kg.records import ApprovalStatus

from ..security.mcp_http import MALLORY, two_agent_fixtures

CLOSE = "demo.ledger.close_account"


home, rt = two_agent_fixtures()


def test_a_poll_while_the_approvers_resume_runs_the_tool_waits_on(
        home: Path, rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    session = GovernedSession(rt, MALLORY)
    first = session.call(CLOSE, {"account": "acct-2"}, HostMeta(idempotency_key="k"))
    assert first.status == "awaiting_approval", first
    assert first.outcome is not None
    run_id = first.outcome.run_id

    entered, release = threading.Event(), threading.Event()
    calls: list[tuple[Any, ...]] = []
    with Runtime(home) as approver:
        approver.decide_approval(first.structured["approval_id"], approver_id=APPROVER,
                                 token=DEMO_TOKENS[APPROVER],
                                 status=ApprovalStatus.APPROVED, resume=False)
        real = approver.tools._impls[CLOSE]

        def held(*args: Any) -> Any:  # the approver's tool, held mid-call
            calls.append(args)
            entered.set()
            assert release.wait(60), "the test never let the tool go"
            return real(*args)

        monkeypatch.setitem(approver.tools._impls, CLOSE, held)
        resuming = threading.Thread(target=approver.resume, args=(run_id,), daemon=True)
        own_submit = rt.approval_flow.submit

        def submit_late(proposal: Any) -> Any:
            # the poll found the approval approved and usable; before it submits, the
            # approver's process resumes the run and its tool is running
            resuming.start()
            assert entered.wait(60), "the approver's resume never reached the tool"
            return own_submit(proposal)

        monkeypatch.setattr(rt.approval_flow, "submit", submit_late)
        try:
            mid = session.latest(first, CLOSE)
            # before: `in_progress`, and the wait ended with it
            assert mid.status == "awaiting_approval", (mid.status, mid.text)
        finally:
            release.set()
            if resuming.is_alive():
                resuming.join(60)
        assert not resuming.is_alive()
        monkeypatch.undo()
    done = session.latest(first, CLOSE)
    assert done.status == "executed", (done.status, done.text)
    assert done.structured["account"] == "acct-2", done.structured
    assert len(calls) == 1, calls  # the tool ran once, in the approver's process
    rt.refresh()
    kinds = [e.kind for e in rt.journal.events()]
    assert kinds.count("action.intent") == 1, kinds
