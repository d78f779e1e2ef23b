"""Reading the inbox costs reads linear in the approvals waiting, not their square.

Finding: the inbox (``GET /api/inbox``, ``/api/overview``'s count — which the web page polls
every 3 s for every signed-in person —, a run view's inbox, ``cradle-kg inbox``) read, for
*each* pending approval, its run's events from the first until the decision that asked for
it (to name the asking policies), and the events of its action's digest once more (to find
the proposal that asked). An agent's token asks for an approval with every proposal of an
irreversible tool — no limit counts them, they run nothing — so one agent that proposed
400 closures in one run made each inbox read decode 80,000 events (7.6 s on this machine,
quadratic: 1,000 would be about 50 s), and 400 proposals of one closure in 400 runs of its
own made each read decode 160,000 (2.5 s). The JSON API answers its calls one at a time
(one lock), so while the page polled, no approver could decide and no agent could submit.

Now the decision that asked is read by its id (its events' subject, one index probe), and
the proposal from the digest's events the approval was folded from (read once): the events
an inbox read decodes are a few per approval. Counted here as the event rows the journal
decodes (not time: the machine is shared).

A real runtime over the demo home (its ``close_account`` asks for an approval every time).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.inbox import inbox

from .inputcli import fresh_home

N = 120


def _close(pid: str, run: str, account: str) -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.close_account",
                       "target": f"ledger:{account}", "arguments": {"account": account}}}


def _read_inbox(home: Path, decoded: Callable[[], int], **kw: Any) -> tuple[int, int, int]:
    """(items, rows decoded by one inbox read, events in the journal)."""
    with Runtime(home, graph_sync=False) as rt:
        total = sum(1 for _ in rt.journal.events())
        before = decoded()
        items = inbox(rt, **kw)
        return len(items), decoded() - before, total


def test_many_approvals_in_one_run(tmp_path: Path, decoded: Callable[[], int]) -> None:
    home = fresh_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        for i in range(N):
            out = rt.submit(_close(f"p{i}", "run:many", f"acct-{i}"))
            assert out.status == "awaiting_approval"
    items, rows, total = _read_inbox(home, decoded)
    assert items == N
    # before: 29,160 rows for these 120 approvals (the run up to each one's decision)
    assert rows <= 4 * N + 10, (rows, total)
    items, rows, _ = _read_inbox(home, decoded, run_id="run:many")  # a run view's inbox
    assert items == N and rows <= 4 * N + 10 + total, rows


def test_one_action_asked_in_many_runs(tmp_path: Path, decoded: Callable[[], int]) -> None:
    home = fresh_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        for i in range(N):
            out = rt.submit(_close("p", f"run:r{i}", "acct-1"))
            assert out.status == "awaiting_approval"
    items, rows, total = _read_inbox(home, decoded)
    assert items == N
    # before: 14,761 rows (the digest's events again for each of its approvals)
    assert rows <= 4 * N + 10, (rows, total)


def test_the_inbox_says_what_it_said(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        for i in range(3):
            rt.submit(_close(f"p{i}", f"run:x{i % 2}", f"acct-{i}"))
        items = inbox(rt)
    assert [i.title for i in items] == [f"demo.ledger.close_account on ledger:acct-{i}"
                                        for i in range(3)]
    for item in items:
        assert item.proposed_by == AGENT and item.policies == ["demo-close-needs-approval"]
        assert item.action is not None and item.action["arguments"]["account"] in item.title
