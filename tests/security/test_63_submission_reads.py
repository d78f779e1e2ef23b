"""What a submission reads does not grow with the agent's proposals in other runs.

Finding: gate 1 asks whether an approval covers the action (``ApprovalBook.usable``), and a
proposal that needs one looks for a pending approval of its own (``ApprovalFlow.request``):
both read and folded *every* event of the action's digest (``approval:<digest>``), in every
run that ever proposed that action, to keep only this run's. An agent's token proposes an
irreversible action in as many runs as it likes (no limit counts proposals that wait for a
person: nothing runs), so proposing one closure of ``acct-2`` in 1,000 runs of its own
made each new submission of it decode 2 rows per earlier run (2,000 rows and 164 ms per
submission at the thousandth, 71 s for the thousand; quadratic — a legitimate proposal of
that action by anyone waited as long). Likewise the first submission of a proposal id in
a run looked the id up among *all* its events (``recorded_submission``'s fallback for
journals written before ids were claimed): one id reused in N runs, N rows a submission.

Now both read the digest's (or id's) events of the submission's own run only (``WHERE
subject = ? AND run_id = ?``: the other runs' rows are never decoded): the same
thousand closures take 5 to 6 ms each, the first as the last. Counted here as the event rows
the journal decodes (not time: the machine is shared), on both journals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus

from .inputcli import fresh_home

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

N = 60


def _close(pid: str, run: str) -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.close_account", "target": "ledger:acct-2",
                       "arguments": {"account": "acct-2"}}}


def _balance(pid: str, run: str) -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.balance", "target": "ledger:acct-2",
                       "arguments": {"account": "acct-2"}}}


def _rows_per_submission(rt: Runtime, decoded: Callable[[], int],
                         proposals: list[dict[str, Any]]) -> list[int]:
    out = []
    for p in proposals:
        before = decoded()
        rt.submit(p)
        out.append(decoded() - before)
    return out


def test_one_action_in_many_runs(tmp_path: Any, decoded: Callable[[], int]) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        rows = _rows_per_submission(rt, decoded, [_close(f"p{i}", f"run:{i}")
                                                  for i in range(N)])
        # before: 2 rows per earlier run (118 for the 60th submission)
        assert max(rows) <= 4, rows
        assert max(rows[N // 2:]) <= max(rows[:N // 2]), rows

        # the run's own approval is still found, and used once
        waiting = rt.submit(_close("p7", "run:7"))
        assert waiting.status == "awaiting_approval" and waiting.approval is not None
        _, outcome = rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                                        token=DEMO_TOKENS[APPROVER],
                                        status=ApprovalStatus.APPROVED)
        assert outcome is not None and outcome.status == "executed"
        # another run's submission of the same action is not covered by it
        assert rt.submit(_close("p8-again", "run:8")).status == "awaiting_approval"
        again = rt.submit({**_close("p7-again", "run:7"), "step": 2})  # another call
        assert again.status == "awaiting_approval", again  # the approve-once is used


def test_one_proposal_id_in_many_runs(tmp_path: Any, decoded: Callable[[], int]) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        rows = _rows_per_submission(rt, decoded, [_balance("same", f"run:{i}")
                                                  for i in range(N)])
        # before: one row per earlier run (59 for the 60th submission)
        assert max(rows) <= 4, rows
        # the id is still claimed once per run
        replay = rt.submit(_balance("same", "run:3"))
        assert replay.replayed
