"""A submission under a key does not read every approval its run asked for the action.

Attack: ``test_236`` answers a proposal under the agent's idempotency key with the pending
approval the key's earlier proposal asked for. To find it, each keyed submission read and
decoded *every* ``approval.requested`` of the action in its run — what ``test_87`` had
removed from the submission path. An agent proposing one action again and again in one
run (an MCP session is one run), each time under a new key, asks for one approval each
time (up to ``waiting_per_agent``, 256 by default; the decided ones stay), so the N-th
submission decoded N rows: quadratic, and a legitimate use of an approval in that run
waited behind them.

What must hold: a keyed submission reads a bounded number of the run's requests of the
action (the newest few), whatever the run asked before; a resubmission under the key of
the newest request is still answered with its pending approval, nothing new asked.
On both journals.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.records import OutcomeStatus

from .inputcli import fresh_home
from .reads import rows_read

pytestmark = pytest.mark.usefixtures("journal_backend")


def _close(pid: str, key: str) -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": "run:one", "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.close_account", "target": "ledger:acct-2",
                       "arguments": {"account": "acct-2"}, "idempotency_key": key}}


def test_keyed_submissions_read_a_bounded_number_of_requests(
        tmp_path: Path, decoded: Callable[[], int]) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        rows: list[int] = []
        for i in range(61):
            n, outcome = rows_read(decoded, lambda i=i: rt.submit(_close(f"p{i}", f"k{i}")))
            assert outcome.status is OutcomeStatus.AWAITING_APPROVAL
            rows.append(n)
        # before: one row more per request the run asked for the action (61 at the 61st)
        assert max(rows[50:]) <= max(rows[:10]) + 2, (rows[:10], rows[50:])
        # the newest key asked again: its pending approval, nothing new asked
        asked = sum(1 for e in rt.journal.events() if e.kind == "approval.requested")
        first = rt.submit(_close("p60", "k60"))
        again = rt.submit(_close("p-again", "k60"))
        assert first.approval is not None and again.approval is not None
        assert again.approval.id == first.approval.id
        assert sum(1 for e in rt.journal.events() if e.kind == "approval.requested") == asked
