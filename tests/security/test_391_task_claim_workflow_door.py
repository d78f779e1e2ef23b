"""A workflow's tool steps cannot spend another agent's task.

Finding (review of the twenty-second round's changes, part two): a task a ``task`` limit
counts is its first agent's at the doors an agent names it (``test_376``, ``test_377``),
but a workflow run's tool steps propose in the task named by the run's id, which the
workflow's agent chooses when it starts the run (``POST /api/workflows/<name>/runs``'s
``run_id``, ``cradle-kg workflow run --run``), and the engine submitted them unchecked.
The host gave ``agent:ledger-assistant`` the task ``ticket-42`` under a limit of 2 calls an
hour; Mallory, the agent of a workflow of the home, started a run of it named
``ticket-42``: its credit executed in the victim's task, and the victim's second call was
denied (``rate_limit_task``).

What must hold: a start whose run names another agent's task (under a ``task`` limit) is
refused (``task_not_yours``), nothing journaled; a workflow run's steps claim their task
for the workflow's agent, as a proposal does, and another agent naming it is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.config import Limit, load_config, save_config
from cradle_kg.errors import TaskOwnershipError
from cradle_kg.workflow import runner

from .homes import credit, json_api
from .mcp_http import AGENT, MALLORY, token_for, two_agent_home

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = f"""workflow: pay
version: "1"
agent: {MALLORY}
input:
  type: object
  properties:
    account: {{type: string}}
    amount: {{type: integer, minimum: 1}}
  required: [account, amount]
  additionalProperties: false
steps:
  - id: pay
    kind: tool
    tool: demo.ledger.credit
    tools: [demo.ledger.credit]
    target: "ledger:{{account}}"
    inputs: {{account: input.account, amount: input.amount}}
    input:
      type: object
      properties:
        account: {{type: string}}
        amount: {{type: integer}}
      required: [account, amount]
    output:
      type: object
      properties:
        ok: {{type: boolean}}
      required: [ok]
"""
TASK = "ticket-42"
PAY = {"account": "acct-1", "amount": 1}


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    home = two_agent_home(tmp_path / "home")
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"limits": (
        Limit(scope="task", window_seconds=3600, max_calls=2),)}))
    (home / "workflows").mkdir()
    (home / "workflows" / "pay.yaml").write_text(FLOW, encoding="utf-8")
    with Runtime(home, graph_sync=False) as runtime:
        yield runtime


def _start(rt: Runtime, run_id: str) -> dict[str, object]:
    return runner.start(runner.open_engine(rt), runner.find_definition(rt.home.root, "pay"),
                        PAY, run_id=run_id, by=MALLORY)


def _victim(rt: Runtime, pid: str, task: str = TASK) -> str:
    return rt.submit({**credit(pid, amount=1, task=task), "run_id": f"run:{pid}"},
                     claim_for=AGENT).status.value


def test_a_workflow_run_cannot_spend_another_agents_task(rt: Runtime) -> None:
    assert _victim(rt, "v-1") == "executed"  # the victim's task, claimed
    head = rt.journal.head()
    with pytest.raises(TaskOwnershipError) as refused:  # before: completed, in ticket-42
        _start(rt, TASK)
    assert rt.journal.head() == head  # nothing of the start
    # what the starter can do: name another run (a workflow start names no task)
    assert refused.value.hint is not None and "run id of your own" in refused.value.hint
    assert _victim(rt, "v-2") == "executed"  # before: denied, rate_limit_task
    intents = [e.actor for e in rt.journal.events() if e.kind == "action.intent"
               and e.payload.get("task_id") == TASK]
    assert intents == [AGENT, AGENT], intents


def test_a_workflow_runs_task_is_its_agents(rt: Runtime) -> None:
    done = _start(rt, "wf-own")
    assert done["status"] == "completed", done
    claims = [(e.actor, e.payload["task_id"]) for e in rt.journal.events()
              if e.kind == "task.claimed"]
    assert claims == [(MALLORY, "wf-own")], claims  # before: none
    with pytest.raises(TaskOwnershipError) as refused:  # before: executed in the run's task
        _victim(rt, "v-3", task="wf-own")
    assert refused.value.hint is not None and "a task of your own" in refused.value.hint


def test_the_json_apis_start_answers_403(rt: Runtime) -> None:
    assert _victim(rt, "v-1") == "executed"
    head = rt.journal.head()
    with json_api(rt) as client:
        started = client.post("/api/workflows/pay/runs", json={"input": PAY, "run_id": TASK},
                              headers={"Authorization": "Bearer "
                                       + token_for(rt.home.root, MALLORY)})
    assert started.status_code == 403, started.text  # before: 200, completed
    assert started.json()["detail"]["error"] == "task_not_yours"
    assert rt.journal.head() == head
