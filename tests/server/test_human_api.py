"""The JSON API for people, on a real ``cradle-kg serve`` over 127.0.0.1.

Workflows (list, validate, start, status), the inbox (approvals, tasks, human steps),
answering a step and closing a task (approvers only), evidence uploads (capped), runs by
state — with the refusals: 401 no token, 403 the wrong identity, 404 unknown, 413 too
large, 422 malformed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from tests import oneshot

from ..inprocess import run_cli
from ..test_shell import CLOSE_FLOW
from .conftest import DemoHome, Server, make_demo_home, start_server, stop_server

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workflows"
BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


@dataclass
class Served:
    srv: Server
    home: DemoHome
    agent: dict[str, str]

    def get(self, path: str, headers: dict[str, str] | None = None, **kw: object
            ) -> httpx.Response:
        return oneshot.get(self.srv.url + path, headers=BOB if headers is None else headers,
                         timeout=30, **kw)  # type: ignore[arg-type]

    def post(self, path: str, headers: dict[str, str] | None = None, **kw: object
             ) -> httpx.Response:
        return oneshot.post(self.srv.url + path, headers=BOB if headers is None else headers,
                          timeout=30, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = make_demo_home(tmp_path_factory.mktemp("people") / "home")
    (home.path / "workflows").mkdir()
    shutil.copy(EXAMPLES / "credit-review.yaml", home.path / "workflows")
    (home.path / "workflows" / "close-account.yaml").write_text(CLOSE_FLOW)
    issued = run_cli("api-token", "issue", AGENT, "--home", str(home.path))
    assert issued.returncode == 0, issued.stderr
    srv = start_server(["--home", str(home.path)], tmp_path_factory.mktemp("plog") / "p.log",
                       home.path)
    yield Served(srv, home, {"Authorization": f"Bearer {issued.stdout.strip()}"})
    stop_server(srv)


START = {"input": {"account": "acct-3", "amount": 15, "reason": "a refund"}}


def test_every_route_needs_a_token(api: Served) -> None:
    for path in ("/api/inbox", "/api/workflows", "/api/overview", "/api/runs/x/view"):
        assert api.get(path, headers={}).status_code == 401
    assert api.post("/api/evidence", headers={}, content=b"x").status_code == 401
    assert api.post("/api/steps/r/s/decide", headers={}, json={"answer": "pay"}
                    ).status_code == 401


def test_workflows_listed_validated_and_started(api: Served) -> None:
    listed = api.get("/api/workflows").json()
    assert [w["id"] for w in listed] == ["close-account", "credit-review"]
    assert all(w["valid"] for w in listed)
    good = api.post("/api/workflows/validate",
                    content=(EXAMPLES / "credit-review.yaml").read_bytes()).json()
    assert good["valid"] and good["workflow"]["steps"][0]["answers"] == ["pay", "hold"]
    bad = api.post("/api/workflows/validate", content=b"workflow: w\nversion: 1\n").json()
    assert not bad["valid"] and bad["problems"][0].startswith("request body:")
    assert api.post("/api/workflows/validate", content=b"a: &x 1\nb: *x\n").json()[
        "problems"] == ["request body:1: YAML anchors and aliases are not accepted"]
    assert api.post("/api/workflows/validate", content=b"\xff\xfe").status_code == 422
    assert api.post("/api/workflows/validate", content=b"#" * (300 * 1024)).status_code == 413

    assert api.post("/api/workflows/nope/runs", json=START).status_code == 404
    # a name is one of the home's files, never a path on the server (its cwd is the repo)
    here = next(p.name for p in sorted(Path.cwd().iterdir()) if p.is_file())
    assert api.post(f"/api/workflows/{here}/runs", json=START).status_code == 404
    assert api.post("/api/workflows/credit-review/runs", json={"inputs": {}}).status_code == 422
    wrong = api.post("/api/workflows/credit-review/runs", json={"input": {"account": "a"}})
    assert wrong.status_code == 422 and "input" in wrong.json()["detail"]["message"]
    started = api.post("/api/workflows/credit-review/runs", json=START, headers=api.agent)
    assert started.status_code == 200, started.text
    assert started.json()["status"] == "waiting_human"


def test_one_inbox_and_a_step_answered_by_an_approver_only(api: Served) -> None:
    # started by the workflow's agent: who starts a run does not review it (test_177)
    run = api.post("/api/workflows/credit-review/runs", json=START,
                   headers=api.agent).json()["run_id"]
    items = api.get("/api/inbox").json()
    kinds = {i["kind"] for i in items}
    assert kinds == {"approval", "task", "step"}, items
    close = next(i for i in items if i["kind"] == "approval")
    assert close["digest"].startswith("sha256:") and close["policies"] == [
        "demo-close-needs-approval"]
    assert close["action"]["action_type"] == "demo.ledger.close_account"
    task = next(i for i in items if i["kind"] == "task")
    assert "verification" in task["title"] or task["reasons"]
    steps = api.get("/api/inbox", params={"kind": "step", "run": run}).json()
    assert [s["id"] for s in steps] == [f"{run}/review"]
    assert steps[0]["question"] == "Credit 15 to acct-3? The agent says: a refund"
    assert api.get("/api/inbox", params={"kind": "bogus"}).status_code == 422

    url = f"/api/steps/{run}/review/decide"
    assert api.post(url, json={"answer": "pay"}, headers=api.agent).status_code == 403
    assert api.post(url, json={"answer": "maybe"}).status_code == 422
    assert api.post(url, json={"answer": "pay", "extra": 1}).status_code == 422
    assert api.post(url, content=b"").status_code == 422
    assert api.post("/api/steps/wf:none/review/decide", json={"answer": "pay"}
                    ).status_code == 404
    done = api.post(url, json={"answer": "pay", "note": "fine"})
    assert done.status_code == 200 and done.json()["status"] == "completed"
    assert api.post(url, json={"answer": "pay"}).status_code == 422  # it no longer waits
    st = api.get(f"/api/workflows/runs/{run}").json()
    assert st["state"] == "completed" and [s["state"] for s in st["steps"]] == [
        "completed", "completed"]
    assert api.get("/api/workflows/runs/wf:none").status_code == 404
    assert run in [r["run_id"] for r in api.get("/api/runs", params={"status": "completed"}
                                                ).json()]
    assert api.get("/api/runs", params={"status": "bogus"}).status_code == 422

    t = api.post(f"/api/tasks/{task['id']}/resolve", json={"note": "fixed"}, headers=api.agent)
    assert t.status_code == 403
    assert api.post(f"/api/tasks/{task['id']}/resolve", json={}).status_code == 422
    assert api.post("/api/tasks/task:none/resolve", json={"note": "x"}).status_code == 404
    resolved = api.post(f"/api/tasks/{task['id']}/resolve", json={"note": "credited by hand"})
    assert resolved.status_code == 200 and resolved.json()["resolved_by"] == APPROVER
    assert api.post(f"/api/tasks/{task['id']}/resolve", json={"note": "x"}).status_code == 422


def test_runs_overview_and_the_run_view(api: Served) -> None:
    counts = api.get("/api/overview").json()
    assert set(counts["runs"]) == {"open", "waiting_for_person", "escalated", "completed",
                                   "completed_with_failures"}
    assert counts["runs"]["waiting_for_person"] >= 1
    view = api.get(f"/api/runs/{api.home.waiting.run_id}/view").json()
    assert view["state"] == "waiting_for_person"
    lane = view["lanes"][0]
    assert [s["stage"] for s in lane["stages"]] == ["proposal", "decision", "approval",
                                                    "action", "observation", "verification",
                                                    "transition"]
    assert [s["state"] for s in lane["stages"]][:3] == ["ok", "wait", "wait"]
    assert view["inbox"][0]["kind"] == "approval"
    assert api.get("/api/runs/run:none/view").status_code == 404


def test_evidence_upload_capped_and_shown(api: Served) -> None:
    up = api.post("/api/evidence", params={"kind": "invoice", "source": "mail"},
                  content=b"invoice 9", headers=api.agent)
    assert up.status_code == 200, up.text
    ref = up.json()["ref"]
    shown = api.get(f"/api/evidence/{ref}").json()
    assert shown["intact"] and shown["added"][0]["by"] == AGENT
    assert shown["added"][0]["kind"] == "invoice" and shown["added"][0]["at"]
    assert api.post("/api/evidence", content=b"x" * (1024 * 1024 + 1)).status_code == 413
    assert api.post("/api/evidence", content=b"").status_code == 422
    assert api.post("/api/evidence", params={"kind": "k" * 201}, content=b"x").status_code == 422
    assert api.get("/api/evidence/sha256:" + "0" * 64).status_code == 404
    assert api.get("/api/evidence/nothing").status_code == 404
    blob = api.home.path / "evidence" / ref[7:9] / ref[9:]
    blob.chmod(0o644)
    blob.write_bytes(b"invoice 99")
    assert api.get(f"/api/evidence/{ref}").status_code == 409


def test_approving_a_workflow_s_tool_step_walks_the_run_on(api: Served) -> None:
    # started by the workflow's agent: who starts a run does not approve its actions
    # (test_178)
    started = api.post("/api/workflows/close-account/runs", headers=api.agent,
                       json={"input": {"account": "acct-6"}, "run_id": "close-6"}).json()
    assert started["status"] == "waiting_approval"
    assert api.post("/api/workflows/close-account/runs", json={
        "input": {"account": "acct-6"}, "run_id": "bad/id"}).status_code == 422
    item = api.get("/api/inbox", params={"run": "close-6"}).json()[0]
    assert item["kind"] == "approval"
    done = api.post(f"/api/approvals/{item['id']}/approve", json={}).json()
    assert done["outcome"]["status"] == "executed" and done["workflow"]["status"] == "completed"
    assert api.get("/api/workflows/runs/close-6").json()["state"] == "completed"
