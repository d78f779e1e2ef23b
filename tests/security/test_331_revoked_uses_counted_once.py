"""A revoked reusable approval's uses were counted again at every look at it.

Finding (the twentieth round's review): ``uses`` (how many actions ran under a reusable
approval before a person revoked it, ``test_316``) is counted when the approval is read —
``Journal.approval_uses``, one range of the run's events between the approving decision
and the revoke, every event of the run in it read (``events_run``: no index holds an
intent's approval). The agent whose approval it was reads it as often as it likes:
``GET /api/approvals/{id}`` counted it three times (the agent's check that the approval is
its own, the view, the answer), ``GET /api/approvals`` once per such approval of the page.
The run is the agent's, and it fills that range before the revoke with what it submits:
measured on SQLite, 0.3 s per count with 200,000 events in the range, so about a second
of the server's time per poll.

Now a count is made once per process and approval: events before the revoke never change
(a journal only grows, a revoke's seq is fixed), so the count of a range that ends at the
revoke is the same at every look. Kept for the 4,096 approvals read last.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime

from .homes import json_api
from .mcp_http import AGENT, token_for, two_agent_home
from .test_304_revoke_an_approval import revoke
from .test_316_used_reusable_approval_revoked import used_reusable

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_an_agent_polling_its_revoked_approval_counts_its_uses_once(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    agent = {"Authorization": f"Bearer {token_for(home, AGENT)}"}
    with Runtime(home, graph_sync=False) as rt, json_api(rt) as client:
        approval = used_reusable(rt, uses=3)
        revoke(rt, approval.id)
        journal = rt.approvals.journal
        real = journal.approval_uses
        counts: list[Any] = []

        def counting(*args: Any, **kwargs: Any) -> int:
            counts.append(args)
            return real(*args, **kwargs)

        journal.approval_uses = counting  # type: ignore[method-assign]
        try:
            for _ in range(5):
                seen = client.get(f"/api/approvals/{approval.id}", headers=agent)
                assert seen.status_code == 200, seen.text
                assert seen.json()["revoked"]["uses"] == 3
                page = client.get("/api/approvals", headers=agent)
                assert page.status_code == 200, page.text
                assert [a["revoked"]["uses"] for a in page.json() if "revoked" in a] == [3]
        finally:
            journal.approval_uses = real  # type: ignore[method-assign]
        assert len(counts) <= 1, len(counts)  # before: 20 (three per view, one per page)
        assert rt.approvals.get(approval.id).revoked.uses == 3  # type: ignore[union-attr]
