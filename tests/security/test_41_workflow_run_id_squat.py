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
and other names as before). And a start and another agent's claim racing for the same new
id no longer both land: ``workflow.started`` carries the run's claim key, so of the two
one is journaled and the other finds the run taken (before, the engine checked the run
was empty, then wrote — a claim between the two put the workflow in another agent's run).

A real ``cradle-kg serve`` on the JSON API with agent tokens; the race is played in process
(the emptiness check answered before the other agent's claim).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.errors import InputError, RunOwnershipError
from cradle_kg.workflow import Engine
from cradle_kg.workflow.definitions import load_file
from tests.workflow.conftest import recorded

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
            return httpx.post(srv.url + path, json=body, timeout=60,
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


@pytest.mark.usefixtures("journal_backend")
def test_a_start_and_a_claim_racing_for_a_new_run_do_not_both_land(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    with Runtime(home) as rt:
        engine = Engine(rt, client=recorded())
        empty = engine._events

        def raced(run_id: str) -> list[Any]:
            """The run is empty when the engine looks — and claimed right after."""
            seen = empty(run_id)
            if not seen and run_id == "review-9":
                rt.claim_run(run_id, MALLORY)
            return seen

        engine._events = raced  # type: ignore[method-assign]
        with pytest.raises(InputError, match="already exists"):
            engine.start(load_file(FLOW), INPUT, run_id="review-9")
        engine._events = empty  # type: ignore[method-assign]
        assert [e.kind for e in rt.journal.events(run_id="review-9")] == ["run.claimed"]
        assert rt.journal.run_agent("review-9") == MALLORY
        # and the other way round: a started workflow run is not claimed by another agent
        started = engine.start(load_file(FLOW), INPUT, run_id="review-10")
        with pytest.raises(RunOwnershipError):
            rt.claim_run(started.run_id, MALLORY)
