"""The JSON API of ``cradle-kg serve`` against an agent's token, on a real server.

Finding (the inbox review): ``/api/approvals`` shows an agent only the approvals its own
actions asked for, but ``/api/inbox`` — and the ``inbox`` of ``/api/runs/{run}/view`` —
listed every pending approval with the exact action, arguments included, to any token: one
agent read another's pending ``close_account`` and its arguments. An agent's token now
sees in the inbox only the approvals its own actions asked for; an approver sees all.
Likewise a workflow run's input, step outputs and human-step context
(``/api/workflows/runs/{run}``, the ``workflow_status`` of the run view, the inbox's human
steps) were any token's: another agent read the workflow's input. They are now the
workflow's agent's and the approvers' (who may start a run may read it): 404 otherwise.

What holds, checked on the same server: an agent cannot decide an approval (403), a GET on
a decision route decides nothing (405), a cookie is no credential (a cross-site form POST
without the bearer header is 401), CORS never allows credentials, and every JSON answer is
``nosniff`` with its own content type.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from tests import oneshot

from ..server.conftest import Server, start_server, stop_server
from .mcp_http import AGENT, MALLORY, ROOT, token_for, two_agent_home

EXAMPLES = ROOT / "examples" / "workflows"


@dataclass
class Setup:
    srv: Server
    approval: str
    run: str
    alice: str
    mallory: str
    workflow_run: str


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("api21")
    home = two_agent_home(tmp / "home")
    (home / "workflows").mkdir()
    shutil.copy(EXAMPLES / "credit-review.yaml", home / "workflows")
    close = {"id": "p-close", "task_id": "t", "run_id": "run:alice", "agent_id": AGENT,
             "action": {"action_type": "demo.ledger.close_account", "target": "ledger:acct-9",
                        "arguments": {"account": "acct-9"}}}
    with Runtime(home) as rt:
        waiting = rt.submit(close)
        assert str(waiting.status) == "awaiting_approval" and waiting.approval is not None
        approval = waiting.approval.id
    alice, mallory = token_for(home, AGENT), token_for(home, MALLORY)
    srv = start_server(["--home", str(home)], tmp / "server.log", home)
    try:
        started = oneshot.post(f"{srv.url}/api/workflows/credit-review/runs", timeout=60,
                             headers={"Authorization": f"Bearer {alice}"},
                             json={"input": {"account": "acct-3", "amount": 15,
                                             "reason": "private-reason-xyz"}})
        assert started.status_code == 200, started.text
        yield Setup(srv, approval, "run:alice", alice, mallory, started.json()["run_id"])
    finally:
        stop_server(srv)


def _get(s: Setup, path: str, token: str, **kw: Any) -> httpx.Response:
    return oneshot.get(s.srv.url + path, headers={"Authorization": f"Bearer {token}"},
                     timeout=60, **kw)


def test_another_agent_does_not_see_a_pending_approval_in_the_inbox(setup: Setup) -> None:
    s = setup
    mine = _get(s, "/api/inbox", s.alice).json()
    assert [i["action"]["arguments"] for i in mine if i["id"] == s.approval] == [
        {"account": "acct-9"}]
    theirs = _get(s, "/api/inbox", s.mallory)
    assert theirs.status_code == 200
    assert s.approval not in {i["id"] for i in theirs.json()}
    assert "acct-9" not in theirs.text
    view = _get(s, f"/api/runs/{s.run}/view", s.mallory)
    assert view.status_code == 200 and view.json()["inbox"] == []
    approver = _get(s, "/api/inbox", DEMO_TOKENS[APPROVER]).json()
    assert s.approval in {i["id"] for i in approver}


def test_another_agent_does_not_read_a_workflow_run(setup: Setup) -> None:
    s = setup
    run = s.workflow_run
    assert _get(s, f"/api/workflows/runs/{run}", s.alice).json()["input"]["reason"] == \
        "private-reason-xyz"
    assert _get(s, f"/api/workflows/runs/{run}", s.mallory).status_code == 404
    view = _get(s, f"/api/runs/{run}/view", s.mallory)
    assert view.status_code == 200 and "workflow_status" not in view.json()
    assert "private-reason-xyz" not in view.text
    assert "private-reason-xyz" not in _get(s, "/api/inbox", s.mallory).text
    assert "private-reason-xyz" in _get(s, "/api/inbox", DEMO_TOKENS[APPROVER]).text
    assert "workflow_status" in _get(s, f"/api/runs/{run}/view", s.alice).json()


def test_agents_cannot_decide_and_a_get_decides_nothing(setup: Setup) -> None:
    s = setup
    for token in (s.alice, s.mallory):
        r = oneshot.post(f"{s.srv.url}/api/approvals/{s.approval}/approve", timeout=60,
                       headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 403
    r = _get(s, f"/api/approvals/{s.approval}/approve", DEMO_TOKENS[APPROVER])
    assert r.status_code == 405
    still = _get(s, f"/api/approvals/{s.approval}", DEMO_TOKENS[APPROVER]).json()
    assert still["approval"]["status"] == "pending"


def test_a_cookie_is_no_credential_and_cors_never_allows_credentials(setup: Setup) -> None:
    s = setup
    evil = {"Origin": "https://evil.example", "Cookie": f"token={DEMO_TOKENS[APPROVER]}",
            "Content-Type": "application/x-www-form-urlencoded"}
    r = oneshot.post(f"{s.srv.url}/api/approvals/{s.approval}/approve", headers=evil,
                   content=b"once=true", timeout=60)
    assert r.status_code == 401
    assert "access-control-allow-credentials" not in r.headers
    pre = oneshot.options(f"{s.srv.url}/api/approvals/{s.approval}/approve", timeout=60,
                        headers={"Origin": "https://evil.example",
                                 "Access-Control-Request-Method": "POST",
                                 "Access-Control-Request-Headers": "authorization"})
    assert pre.headers.get("access-control-allow-credentials") != "true"
    ok = _get(s, "/api/runs", s.mallory)
    assert ok.headers["x-content-type-options"] == "nosniff"
    assert ok.headers["content-type"].startswith("application/json")
