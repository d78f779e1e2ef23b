"""What a view of an approval reads does not grow with what its agent asked in the run.

Finding: ``GET /api/approvals/{id}`` (open to the asking agent's token) and
``approvals show`` go through ``Runtime.view_approval`` -> ``ApprovalFlow.view``, which
read the approval with ``ApprovalBook.read``: every event of the action's digest in the
approval's run — every approval the agent asked for that action there, and every view of
them — to fold one approval and to decide whether the view is news
(``view_is_news``). The run is the agent's and it asks for as many approvals of one
action as it likes (``test_87``), and it polls its approval: each view was linear in what
it wrote. Measured: a view decoded 30 rows with 30 requests of the action in the run and
61 with 60 (and 121 once each of the 60 was viewed once).

Now the view reads the approval as ``ApprovalBook.get`` does (its request, and the
digest's decisions and uses in the run) and the newest events of the digest in the run,
at most ``VIEW_LOOKBACK`` of them (``Journal.subject_events`` of every kind: one range of
``events_subject (subject, seq)`` from its newest end). A view is news when those do not
show the viewer's own view of it since the digest last moved — as before; when the views
since then are more than the lookback, the view counts as news (one more
``approval.viewed``, which ends the next view's walk at once): a view that is news is
never left out. Counted as the event rows the journal decodes (not time: the machine is
shared), on both journals.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.integrations.calls import GovernedSession
from cradle_kg.loop.approvals import VIEW_LOOKBACK
from cradle_kg.records import ApprovalStatus

from .inputcli import fresh_home
from .reads import rows_read as _rows

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

CLOSE = "demo.ledger.close_account"


def _views(rt: Runtime, digest: str, run_id: str) -> list[tuple[str, str]]:
    return [(e.actor, e.payload["approval_id"])
            for e in rt.journal.events_for_subject("approval:" + digest, run_id=run_id)
            if e.kind == "approval.viewed"]


def test_a_view_reads_the_same_whatever_the_run_asked(
        tmp_path: Path, decoded: Callable[[], int]) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        session = GovernedSession(rt, AGENT)
        waiting = session.call(CLOSE, {"account": "acct-2"})
        assert waiting.status == "awaiting_approval" and waiting.approval_id
        assert waiting.outcome is not None
        first, run_id = waiting.approval_id, waiting.outcome.run_id
        rows = []
        for upto in (30, 60):
            while len(rt.approvals.page(limit=None)[0]) < upto:  # the same action again
                assert session.call(CLOSE, {"account": "acct-2"}).status == "awaiting_approval"
            n, seen = _rows(decoded, lambda: rt.view_approval(first, viewer=AGENT))
            assert seen.id == first and seen.status is ApprovalStatus.PENDING
            rows.append(n)
        # before: every event of the digest in the run (30 and 61 rows); now the request
        # and the newest VIEW_LOOKBACK (17 and 17)
        assert rows[1] == rows[0] <= VIEW_LOOKBACK + 1, rows
        digest = seen.action_digest

        # the agent views each of its 60 approvals once: 60 views since the digest moved,
        # more than the lookback — a view of the first (not news: its view is among them,
        # far back) is journaled once more, then polling it journals nothing
        ids = [st.approval.id for st in rt.approvals.page(limit=None)[0]
               if st.approval.run_id == run_id]
        assert len(ids) == 60
        for approval_id in ids:
            rt.view_approval(approval_id, viewer=AGENT)
        assert len(_views(rt, digest, run_id)) == 61  # the first's twice (at 30, 60), the rest once
        n, _ = _rows(decoded, lambda: rt.view_approval(first, viewer=AGENT))
        assert n <= VIEW_LOOKBACK + 1, n  # before: 121
        assert _views(rt, digest, run_id)[-1] == (AGENT, first)  # counted as news
        for _ in range(5):
            rt.view_approval(first, viewer=AGENT)
        assert len(_views(rt, digest, run_id)) == 62

        # the semantics are unchanged: a decision moves the digest, the next look of each
        # viewer is news again, once
        rt.decide_approval(first, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                           status=ApprovalStatus.REJECTED, reason="no")
        for _ in range(3):
            seen = rt.view_approval(first, viewer=AGENT)
            rt.view_approval(first, viewer=APPROVER)
        assert seen.status is ApprovalStatus.REJECTED
        assert _views(rt, digest, run_id)[-2:] == [(AGENT, first), (APPROVER, first)]
        assert len(_views(rt, digest, run_id)) == 64
        with pytest.raises(Exception, match="unknown approval"):
            rt.view_approval("apr:nothing", viewer=AGENT)
