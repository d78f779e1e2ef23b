"""What a call waiting for an approval reads at each poll does not grow with its run.

Finding: an MCP call that waits for an approval (``serve --approval-wait``) asks the
journal every ``POLL_SECONDS`` where it stands (``GovernedSession.latest``): its outcome
(one probe) and, for a waiting one, the approval (``ApprovalBook.get``) — which folded
every event of the action's digest in the run, the approvals the session asked for the
same action by other calls included, and, once approved, read them all again for the
proposal (``requested_proposal``). The session is one run and its agent asks for as many
approvals of one action as it likes (``test_87``): 60 of them made each poll of any of its
waiting calls decode 61 rows, 120 of them 121 (linear in the run per poll, every second,
for every waiting call). ``GET /api/approvals/{id}`` (an agent's token, for its own
approvals) read them twice the same way before its view, and three times in all.

Now ``get`` reads the approval's request (one probe of ``approval_ids``) and the digest's
decisions and uses in its run (``events_for_subject(kinds=)``: the other requests are
skipped in the index walk, not decoded) — as many as people decided; and
``requested_proposal`` without the events in hand reads the request alone. 1 row a poll
while nobody decided, whatever the approvals asked. Counted as the event rows the
journal decodes (not time: the machine is shared), on both journals.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.integrations.calls import GovernedSession
from cradle_kg.records import ApprovalStatus

from .inputcli import fresh_home
from .reads import rows_read as _rows

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

CLOSE = "demo.ledger.close_account"


def test_a_waiting_call_polls_the_same_whatever_its_run_asked(
        tmp_path: Path, decoded: Callable[[], int]) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        session = GovernedSession(rt, AGENT)
        waiting = session.call(CLOSE, {"account": "acct-2"})
        assert waiting.status == "awaiting_approval" and waiting.approval_id
        polls = []
        for upto in (10, 60):
            while len(rt.approvals.page(limit=None)[0]) < upto:  # the same action again
                assert session.call(CLOSE, {"account": "acct-2"}).status == "awaiting_approval"
            n, latest = _rows(decoded, lambda: session.latest(waiting, CLOSE))
            assert latest.status == "awaiting_approval"
            polls.append(n)
        # before: every event of the digest in the run (11 and 61 rows); now 2 and 2 (the
        # outcome and the request)
        assert polls[1] <= polls[0] <= 3, polls

        n, state = _rows(decoded, lambda: rt.approvals.get(waiting.approval_id or ""))
        assert n == 1 and state.approval.status is ApprovalStatus.PENDING
        n, asked = _rows(decoded, lambda: rt.approvals.requested_proposal(state.approval))
        assert n == 1 and asked.action.action_type == CLOSE

        # decided: the poll sees it, and reads the one decision (and its use) with it
        rt.decide_approval(waiting.approval_id or "", approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
        n, latest = _rows(decoded, lambda: session.latest(waiting, CLOSE))
        assert latest.status == "executed", latest
        assert n <= 3, n
        done = rt.approvals.get(waiting.approval_id or "").approval
        assert done.status is ApprovalStatus.APPROVED and done.consumed
        assert done.approver_id == APPROVER
        with pytest.raises(Exception, match="unknown approval"):
            rt.approvals.get("apr:nothing")


@pytest.mark.slow
def test_resuming_a_run_reads_its_decisions_not_its_events(
        tmp_path: Path, decoded: Callable[[], int]) -> None:
    """The sibling finding: a waiting call whose approval was given in another process
    (an MCP proxy's upstream tool, approved from the web page) goes on through
    ``Runtime.resume`` (also ``runs resume``), which found the run's approvals by decoding
    *every event of the run* — an MCP session's every call (63 rows in a run of 60 events,
    301 in one of 300). Now the run's approval subjects come from ``approval_ids``
    (nothing decoded) and each is folded from its decisions: what was decided, whatever
    the run's size."""
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        session = GovernedSession(rt, AGENT)
        waiting = session.call(CLOSE, {"account": "acct-2"})
        assert waiting.approval_id and waiting.outcome is not None
        run_id = waiting.outcome.run_id
        rows = []
        for upto in (60, 300):
            while len(list(rt.journal.events(run_id=run_id))) < upto:  # calls that run
                assert session.call("demo.ledger.balance", {"account": "acct-2"}).status \
                    == "executed"
            n, resumed = _rows(decoded, lambda: rt.resume(run_id))
            assert resumed == []  # nothing decided yet
            rows.append(n)
        # before: every event of the run (63 and 301 rows); now none
        assert rows[1] <= rows[0] <= 2, rows
        assert [st.approval.id for st in rt.approvals.for_run(run_id)] == [waiting.approval_id]
        rt.decide_approval(waiting.approval_id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                           resume=False)
        n, resumed = _rows(decoded, lambda: rt.resume(run_id))
        assert [o.status for o in resumed] == ["executed"]
        assert rt.resume(run_id) == []  # used once
        assert rt.approvals.for_run("run:nothing") == []
