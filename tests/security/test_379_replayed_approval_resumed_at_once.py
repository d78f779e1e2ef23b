"""Two resumes at once of an approval whose key had run close it once.

``test_378`` closes an approve-once whose key's action ran under another approval: its
resume consumes it and records its proposal's outcome. Two processes resuming that run at
the same moment (``cradle-kg runs resume`` twice, or a resume and an MCP wait) both find
the approval usable and both replay; before the fix each wrote its replay and neither an
outcome nor a consumption.

What must hold: the consumption (under the approval's once-key, held once by the journal)
and the outcome are written by one of them, with its replay, all or none; the other writes
nothing of its own past its replay's refusal and answers with that outcome.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus, OutcomeStatus
from tests.racers import at_once

from .mcp_http import MALLORY, two_agent_home

ROUNDS = 10


def _close(pid: str, run: str, key: str) -> dict[str, object]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": MALLORY,
            "action": {"action_type": "demo.ledger.close_account",
                       "target": f"ledger:{key}", "arguments": {"account": key},
                       "idempotency_key": key}}


def test_two_resumes_at_once_close_the_approval_once(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    with Runtime(home) as one, Runtime(home) as two:
        for n in range(ROUNDS):
            key, first, second = f"acct-r{n}", f"run:a-{n}", f"run:b-{n}"
            approvals = [one.submit(_close(f"p{n}-{i}", run, key)).approval
                         for i, run in enumerate((first, second))]
            for approval in approvals:
                assert approval is not None
                one.decide_approval(approval.id, approver_id=APPROVER,
                                    token=DEMO_TOKENS[APPROVER],
                                    status=ApprovalStatus.APPROVED, resume=False)
            assert one.resume(first)[0].status is OutcomeStatus.EXECUTED
            got = at_once(partial(one.resume, second), partial(two.resume, second))
            assert not [g for g in got if isinstance(g, Exception)], got
            answered = [o for g in got for o in g]
            assert answered and all(o.status is OutcomeStatus.EXECUTED and o.replayed
                                    for o in answered), got
            kinds = [e.kind for e in one.journal.events(run_id=second)]
            # before: one or two replays, no consumption, no outcome but the waiting one
            assert kinds.count("approval.consumed") == 1, kinds
            assert kinds.count("run.outcome") == 2, kinds  # waiting, then its replay's
            assert kinds.count("action.intent") == 0, kinds
            assert one.resume(second) == []
