"""A workflow run cannot take a run id another entry point derives.

Finding: ``POST /api/workflows/{name}/runs`` took the caller's ``run_id`` as the run's id,
checked only for its characters and that no event was in the run yet. A workflow run is
its workflow's agent's from its ``workflow.started`` (``test_39``), so an agent allowed to
start a workflow could start it under ``run:task-m`` — the run a proposal for task
``task-m`` lands in when it names no run (``run:<task_id>``; an MCP or LangGraph session's
run is ``run:<session>``, a plan's ``run:plan:<id>``) — before the agent that task
belongs to proposed: that agent's proposals for its own task were then refused, 403 "run
belongs to", for a run it never saw. A caller-chosen workflow run id may no longer begin
with ``run:`` (on the JSON API and ``workflow run --run`` alike; a derived id, ``wf:…``,
and other names as before).

Not closed here, and since closed by ``test_44``: the engine checked that a new run was
empty, then wrote its ``workflow.started`` — another agent's claim between the two put the
workflow in that agent's run. The start (and an agent's claim) is now written only as its
run's first event, a guard the journal checks under its writer's lock and never stores:
the bytes of every ``workflow.started``, and the strict replay of the runs recorded before,
are unchanged.

A real ``cradle-kg serve`` on the JSON API with agent tokens.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx

from cradle_kg import Runtime
from tests import oneshot

from ..server.conftest import start_server, stop_server
from .mcp_http import AGENT, MALLORY, ROOT, token_for, two_agent_home

FLOW = ROOT / "examples" / "workflows" / "credit-review.yaml"  # its agent: AGENT
INPUT = {"account": "acct-3", "amount": 15, "reason": "refund"}


def _credit(agent: str, pid: str, task: str) -> dict[str, Any]:
    """A proposal naming no run: it lands in ``run:<task>``."""
    return {"id": pid, "task_id": task, "agent_id": agent,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-1",
                       "arguments": {"account": "acct-1", "amount": 5}}}


def test_a_workflow_cannot_squat_the_run_of_another_agent_s_task(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    (home / "workflows").mkdir()
    shutil.copy(FLOW, home / "workflows")
    Runtime(home).close()  # its journal, opened once
    alice, mallory = token_for(home, AGENT), token_for(home, MALLORY)
    srv = start_server(["--home", str(home)], tmp_path / "server.log", home)
    try:
        def post(path: str, token: str, body: dict[str, Any]) -> httpx.Response:
            return oneshot.post(srv.url + path, json=body, timeout=60,
                              headers={"Authorization": f"Bearer {token}"})

        squat = post("/api/workflows/credit-review/runs", alice,
                     {"input": INPUT, "run_id": "run:task-m"})
        assert squat.status_code in (400, 422), squat.text  # refused, not started
        assert "may not begin with `run:`" in squat.text, squat.text
        # the task's own agent proposes for it as ever, in its run
        own = post("/api/proposals", mallory, _credit(MALLORY, "p-m", "task-m"))
        assert own.status_code == 200, own.text
        assert own.json()["status"] == "executed", own.text
        # a workflow run under a name of its own, or a derived one, starts as before
        named = post("/api/workflows/credit-review/runs", alice,
                     {"input": INPUT, "run_id": "refund-7"})
        assert named.status_code == 200 and named.json()["run_id"] == "refund-7", named.text
        derived = post("/api/workflows/credit-review/runs", alice, {"input": INPUT})
        assert derived.status_code == 200, derived.text
        assert derived.json()["run_id"].startswith("wf:"), derived.text
    finally:
        stop_server(srv)
    with Runtime(home) as rt:
        assert not [e for e in rt.journal.events(run_id="run:task-m")
                    if e.kind == "workflow.started"]
        assert rt.journal.run_agent("run:task-m") == MALLORY
