"""An approval's expiry without a time zone is a typed refusal, not a server error.

Finding: ``POST /api/approvals/{id}/approve`` took ``{"until": "2030-01-01T00:00:00"}``
— a valid ISO-8601 time without an offset — and the runtime compared it with the
journal's clock, which is aware: ``TypeError: can't compare offset-naive and
offset-aware datetimes`` escaped the API's typed errors, the approver got HTTP 500 and
the server's log a traceback (the same from Python, ``Runtime.decide_approval``). An
expiry must now carry its offset: a 422 naming ``until``, nothing journaled, and the
approval still waits — an approver may then decide it properly.

A real ``cradle-kg serve`` on 127.0.0.1 and an approver's token.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from tests import oneshot

from ..server.conftest import start_server, stop_server
from .mcp_http import two_agent_home, waiting_close


@pytest.mark.slow
def test_a_naive_expiry_is_a_422_and_the_approval_still_waits(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    approval, before = waiting_close(home)
    log = tmp_path / "server.log"
    srv = start_server(["--home", str(home)], log, home)
    try:
        headers = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
        url = f"{srv.url}/api/approvals/{approval}/approve"
        naive = oneshot.post(url, headers=headers, json={"until": "2030-01-01T00:00:00"},
                           timeout=60)
        assert naive.status_code == 422, (naive.status_code, naive.text)
        assert "until" in naive.text and "time zone" in naive.text
        with Runtime(home) as rt:
            assert sum(1 for _ in rt.journal.events()) == before  # nothing journaled
            assert str(rt.approvals.get(approval).approval.status) == "pending"
        aware = oneshot.post(url, headers=headers, json={"until": "2030-01-01T00:00:00Z"},
                           timeout=60)
        assert aware.status_code == 200, aware.text
        assert aware.json()["outcome"]["status"] == "executed"
    finally:
        stop_server(srv)
    assert "Traceback" not in log.read_text(errors="replace")
