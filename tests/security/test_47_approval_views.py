"""Polling an approval does not grow the journal: a view is journaled when it is news.

Finding: every ``GET /api/approvals/{id}`` appended an ``approval.viewed`` event, so one
approver (or a script holding an approver's token, or the agent whose action waits) grew
the journal without bound by polling — 80 events a second from one client on this
machine. The view record is kept for the audit (who saw the approval, in which state,
before deciding), and now only when it says something new: a viewer's first view of an
approval, and their first after an event other than a view was written about its action
(a refused attempt, the decision, ...). Polls in between are answered, not journaled.

A real ``cradle-kg serve`` on 127.0.0.1, an approver's token and the agent's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, REQUESTER
from tests import oneshot

from ..server.conftest import start_server, stop_server
from .mcp_http import AGENT, token_for, two_agent_home, waiting_close


def _views(home: Path) -> list[str]:
    with Runtime(home) as rt:
        return [e.actor for e in rt.journal.events_of_kind("approval.viewed")]


@pytest.mark.slow
def test_polling_an_approval_journals_one_view_per_viewer_and_change(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    approval, _ = waiting_close(home)
    srv = start_server(["--home", str(home)], tmp_path / "serve.log", home)
    bob = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
    alice = {"Authorization": f"Bearer {DEMO_TOKENS[REQUESTER]}"}
    agent = {"Authorization": f"Bearer {token_for(home, AGENT)}"}
    url = f"{srv.url}/api/approvals/{approval}"

    def poll(headers: dict[str, str], times: int, status: str) -> None:
        for _ in range(times):
            seen = oneshot.get(url, headers=headers, timeout=60)
            assert seen.status_code == 200, seen.text
            assert seen.json()["approval"]["status"] == status

    try:
        poll(bob, 25, "pending")
        poll(agent, 10, "pending")  # the agent whose action waits may look too
        poll(bob, 5, "pending")
        assert _views(home) == [APPROVER, AGENT]  # one each, not 40
        # the approval's action moved on: alice acts for the agent, her approval is refused
        # (and journaled, `approval.refused`): the next look of each viewer is news again
        refused = oneshot.post(f"{url}/approve", headers=alice, json={}, timeout=60)
        assert refused.status_code == 403, refused.text
        poll(bob, 10, "pending")
        poll(agent, 3, "pending")
        poll(alice, 5, "pending")  # her first view
        assert _views(home) == [APPROVER, AGENT, APPROVER, AGENT, REQUESTER]
        decided = oneshot.post(f"{url}/approve", headers=bob, json={}, timeout=60)
        assert decided.status_code == 200, decided.text
        poll(bob, 10, "approved")
        assert _views(home) == [APPROVER, AGENT, APPROVER, AGENT, REQUESTER, APPROVER]
    finally:
        stop_server(srv)
    with Runtime(home) as rt:
        assert rt.journal.verify().intact
    assert "Traceback" not in (tmp_path / "serve.log").read_text(errors="replace")
