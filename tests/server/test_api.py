"""The JSON API on a real server: tokens, submit, approvals, runs.

Agents get a token from ``cradle-kg api-token issue`` (the CLI run in this process: the
server is the real process here, the command only writes the home's token file); approvers
use the token whose hash is in the home's config (the demo's ``demo-token-bob``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, REQUESTER
from tests import oneshot

from ..inprocess import run_cli
from .conftest import DemoHome, Server, close_proposal, make_demo_home, start_server, stop_server

#: a module whose set-up is long (servers, browsers, packs built): run first
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, DemoHome, str]]:
    home = make_demo_home(tmp_path_factory.mktemp("api") / "home")
    issued = run_cli("api-token", "issue", AGENT, "--home", str(home.path))
    assert issued.returncode == 0, issued.stderr
    token = issued.stdout.strip()
    assert token.startswith("ck_")
    srv = start_server(["--home", str(home.path)], tmp_path_factory.mktemp("alog") / "a.log",
                       home.path)
    yield srv, home, token
    stop_server(srv)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_tokens_identify_callers(api: tuple[Server, DemoHome, str]) -> None:
    srv, home, agent_token = api
    assert oneshot.get(srv.url + "/api/runs").status_code == 401
    assert oneshot.get(srv.url + "/api/runs", headers=bearer("wrong")).status_code == 401
    me = oneshot.get(srv.url + "/api/whoami", headers=bearer(agent_token)).json()
    assert me == {"identity": AGENT, "roles": ["agent"]}
    bob = oneshot.get(srv.url + "/api/whoami", headers=bearer(DEMO_TOKENS[APPROVER])).json()
    assert bob == {"identity": APPROVER, "roles": ["approver"]}
    hashes = (home.path / "api-tokens.json").read_text()
    assert agent_token not in hashes and "sha256:" in hashes


def test_agent_submits_its_own_proposals_only(api: tuple[Server, DemoHome, str]) -> None:
    srv, _, agent_token = api
    credit = {"id": "p-api-credit", "task_id": "task-api", "agent_id": AGENT,
              "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-4",
                         "arguments": {"account": "acct-4", "amount": 5}}}
    done = oneshot.post(srv.url + "/api/proposals", json=credit, headers=bearer(agent_token))
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "executed"
    too_big = {**credit, "id": "p-api-big", "action": {**credit["action"],  # type: ignore[dict-item]
                                                      "arguments": {"account": "acct-4",
                                                                    "amount": 5000}}}
    denied = oneshot.post(srv.url + "/api/proposals", json=too_big, headers=bearer(agent_token))
    assert denied.status_code == 200 and denied.json()["status"] == "denied"
    other = {**credit, "agent_id": "agent:someone-else"}
    assert oneshot.post(srv.url + "/api/proposals", json=other,
                      headers=bearer(agent_token)).status_code == 403
    assert oneshot.post(srv.url + "/api/proposals", json=credit,
                      headers=bearer(DEMO_TOKENS[APPROVER])).status_code == 403
    broken = oneshot.post(srv.url + "/api/proposals", json={"agent_id": AGENT},
                        headers=bearer(agent_token))
    assert broken.status_code == 422 and "proposal" in broken.json()["detail"]["message"]
    runs = oneshot.get(srv.url + "/api/runs", headers=bearer(agent_token)).json()
    assert {r["run_id"]: r["status"] for r in runs}["run:task-api"] == "denied"


def test_approvals_listed_viewed_rejected_and_approved(api: tuple[Server, DemoHome, str]) -> None:
    srv, home, agent_token = api
    approval = home.waiting.approval
    assert approval is not None
    pending = oneshot.get(srv.url + "/api/approvals", params={"pending": "true"},
                        headers=bearer(DEMO_TOKENS[APPROVER])).json()
    assert approval.id in {a["id"] for a in pending}
    view = oneshot.get(srv.url + f"/api/approvals/{approval.id}",
                     headers=bearer(DEMO_TOKENS[APPROVER])).json()
    assert view["action"]["arguments"] == {"account": "acct-7"}
    assert view["proposed_by"] == AGENT
    url = srv.url + f"/api/approvals/{approval.id}"
    # the agent is no approver; the requester it acts for may not approve its own action
    assert oneshot.post(url + "/approve", headers=bearer(agent_token)).status_code == 403
    own = oneshot.post(url + "/approve", headers=bearer(DEMO_TOKENS[REQUESTER]))
    assert own.status_code == 403 and "cannot approve" in own.json()["detail"]["message"]
    assert oneshot.post(url + "/reject", json={"reason": ""},
                      headers=bearer(DEMO_TOKENS[APPROVER])).status_code == 422
    ok = oneshot.post(url + "/approve", headers=bearer(DEMO_TOKENS[APPROVER]))
    assert ok.status_code == 200, ok.text
    body = ok.json()
    assert body["approval"]["status"] == "approved"
    assert body["approval"]["approver_id"] == APPROVER
    assert body["outcome"]["status"] == "executed"  # the waiting run went on by itself
    again = oneshot.post(url + "/approve", headers=bearer(DEMO_TOKENS[APPROVER]))
    assert again.status_code == 403 and "already" in again.json()["detail"]["message"]
    second = oneshot.post(srv.url + "/api/proposals", json=close_proposal("acct-6"),
                        headers=bearer(agent_token)).json()
    assert second["status"] == "awaiting_approval"
    rejected = oneshot.post(srv.url + f"/api/approvals/{second['approval']['id']}/reject",
                          json={"reason": "account still has a balance"},
                          headers=bearer(DEMO_TOKENS[APPROVER])).json()
    assert rejected["approval"]["status"] == "rejected" and rejected["outcome"] is None
    assert oneshot.get(srv.url + "/api/approvals/apr:nope",
                     headers=bearer(DEMO_TOKENS[APPROVER])).status_code == 404


def test_the_graph_follows_the_journal(api: tuple[Server, DemoHome, str]) -> None:
    srv, _, agent_token = api
    credit = {"id": "p-api-fresh", "task_id": "task-api-fresh", "agent_id": AGENT,
              "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-5",
                         "arguments": {"account": "acct-5", "amount": 7}}}
    oneshot.post(srv.url + "/api/proposals", json=credit, headers=bearer(agent_token))
    got = oneshot.get(srv.url + "/queries/task-effects", params={"task": "task-api-fresh"},
                    headers={"Accept": "application/sparql-results+json"}).json()
    assert [b["result"]["value"] for b in got["results"]["bindings"]] == ["committed"]


def test_revoked_token_stops_working(api: tuple[Server, DemoHome, str]) -> None:
    srv, home, _ = api
    done = run_cli("api-token", "issue", AGENT, "--home", str(home.path))
    assert done.returncode == 0, done.stderr
    issued = done.stdout.strip()
    assert oneshot.get(srv.url + "/api/whoami", headers=bearer(issued)).status_code == 200
    revoked = run_cli("api-token", "revoke", AGENT, "--home", str(home.path))
    assert revoked.returncode == 0, revoked.stderr
    assert oneshot.get(srv.url + "/api/whoami", headers=bearer(issued)).status_code == 401
    unknown = run_cli("api-token", "issue", "agent:undeclared", "--home", str(home.path))
    assert unknown.returncode == 2 and "not an agent declared" in unknown.stderr + unknown.stdout
