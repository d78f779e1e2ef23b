"""What a token reads from the server is not kept in the browser's cache.

Finding (agent-facing doors review): ``cradle-kg serve`` answered the JSON API — an
approval's view (the proposal's arguments, the person it acts for), a run's journal
events (tools' outputs), the inbox, ``whoami`` — and a closed graph's query results with
no ``Cache-Control`` at all. A browser stores such a ``200`` in its disk cache (a
private cache may store any response that does not forbid it, RFC 9111 §3), so what the
approvers' page fetched with its token stayed on the approver's disk, readable by the next
user of a shared desk after the tab, and the token in its ``sessionStorage``, were gone.

What must hold: every answer to a request that carries credentials (an ``Authorization``
header) says ``Cache-Control: no-store`` — refusals included — unless a route set its own;
an answer to a request without one (the page's static files) is left to the usual rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.server.api import make_router
from cradle_kg.server.guard import SecurityHeaders


@pytest.fixture
def client(ledger_home: Path) -> Iterator[tuple[TestClient, str]]:
    with Runtime(ledger_home) as rt:
        waiting = rt.submit({"id": "p-close", "task_id": "t", "run_id": "run:desk",
                             "agent_id": AGENT, "action": {
                                 "action_type": "demo.ledger.close_account",
                                 "target": "ledger:acct-2",
                                 "arguments": {"account": "acct-2"}}})
        assert waiting.approval is not None
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        app.add_middleware(SecurityHeaders)  # as `serve` wraps its app (server/app.py)
        with TestClient(app) as http:
            yield http, waiting.approval.id


@pytest.mark.parametrize("path", ["/api/whoami", "/api/approvals/{id}", "/api/runs/run:desk",
                                  "/api/inbox", "/api/approvals"])
def test_a_token_s_answers_are_not_stored(client: tuple[TestClient, str], path: str) -> None:
    http, approval = client
    r = http.get(path.format(id=approval),
                 headers={"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"})
    assert r.status_code == 200, r.text
    assert r.headers.get("cache-control") == "no-store", dict(r.headers)  # before: none


def test_a_refused_token_s_answer_is_not_stored_either(
        client: tuple[TestClient, str]) -> None:
    http, approval = client
    r = http.get(f"/api/approvals/{approval}", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401
    assert r.headers.get("cache-control") == "no-store"


def test_an_answer_without_credentials_is_left_alone(client: tuple[TestClient, str]) -> None:
    http, _ = client
    r = http.get("/api/whoami")
    assert r.status_code == 401
    assert "cache-control" not in r.headers
