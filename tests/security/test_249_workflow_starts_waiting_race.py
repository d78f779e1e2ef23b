"""Two processes starting an agent's workflow at once no longer pass ``waiting_per_agent``.

Finding (left open by ``test_202`` and ``test_209``): the cap on what waits for a person on
an agent's behalf is counted again under the journal's writer's lock — its undecided
approvals, the open human steps of its workflow's runs, its open escalation tasks. A run
its token starts (``POST /api/workflows/{name}/runs``) was none of them from its
``workflow.started`` until its first ``human.requested``: the engine writes the start,
then walks the steps before the human one. Within one process the API's lock holds the
start and the walk together; two processes on one journal each counted nothing waiting,
each wrote its start, and at a limit of 1 two reviews waited in the inbox — the wider the
slower a step before the human one (here a tool step that waits for the other process's).

Now a run of a workflow with a human step counts from its start (the derived
``starting_runs``, written in the start's own transaction) until its first
``human.requested`` or its end: the second start is refused (429 ``quota_exceeded``), no
``workflow.started`` of it written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.server.auth import issue_agent_token
from tests.racers import race, racer, racing_context
from tests.security.gated_flow import TESTER, gated_home, register_gate, start
from tests.security.homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")

def _starter(home: str, token: str, label: str, go: Any, gate: Any, out: Any) -> None:
    """One ``serve``'s worth: its own runtime and JSON API, the agent's token starting a
    run. A start refused lets the other's tool step go (it waits for two at the gate)."""
    with Runtime(home, graph_sync=False) as rt, json_api(rt) as client:
        register_gate(rt, gate)
        go.wait(60)
        answer = start(client, token, label)
        if answer.status_code != 200:
            gate.wait(60)
        out.put((label, answer.status_code, answer.json()))


def test_two_processes_starting_runs_keep_the_limit(tmp_path: Path) -> None:
    home = gated_home(tmp_path / "home", waiting=1)
    with Runtime(home, graph_sync=False) as rt:
        token = issue_agent_token(rt.home, rt.config, TESTER)
    ctx = racing_context()
    go, gate, out = ctx.Barrier(2), ctx.Barrier(2), ctx.Queue()
    procs = [racer(ctx, _starter, str(home), token, label, go, gate, out)
             for label in ("one", "two")]
    said = {label: (status, body) for label, status, body in race(procs, out, timeout=120)}
    statuses = sorted(status for status, _ in said.values())
    assert statuses == [200, 429], said  # before: [200, 200], two reviews waiting
    (refused,) = [body for status, body in said.values() if status == 429]
    assert refused["detail"]["error"] == "quota_exceeded", refused
    (taken,) = [body for status, body in said.values() if status == 200]
    assert taken["status"] == "waiting_human", taken
    with Runtime(home, graph_sync=False) as rt:
        started = [e for e in rt.journal.events() if e.kind == "workflow.started"]
        assert [e.run_id for e in started] == [taken["run_id"]]  # nothing of the refused one
        assert rt.journal.open_step_requests(agent=TESTER, limit=0)[1] == 1
        assert rt.journal.verify().intact

