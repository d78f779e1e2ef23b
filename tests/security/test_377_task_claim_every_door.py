"""A task a ``task`` limit counts is its first agent's at every door an agent names it.

Finding (twenty-second review, left open; ``test_376`` over MCP's HTTP transport): the task
id an agent names counted in the limit of whichever agent the host gave that task. The
same id reached the limit from every door where an agent, or a file written for one, names
its task: ``POST /api/proposals`` (the agent writes the whole proposal), a governed session
(MCP's ``cradle-kg/task``, over stdio too), LangGraph's ``configurable``, and ``cradle-kg
submit``. Before the fix, each of Mallory's calls here executed in the victim's task.

What must hold: at each of those doors another agent's task is refused
(``task_not_yours``; HTTP 403, MCP ``refused``, CLI exit 2), nothing journaled; of two
agents racing for a new task, one claim is written; the host's own code in process may run
several agents in one task, and a task no ``task`` limit counts is shared as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.config import Limit, load_config, save_config
from cradle_kg.errors import TaskOwnershipError
from cradle_kg.integrations.calls import GovernedSession, HostMeta
from tests.racers import at_once

from .homes import credit, json_api
from .inputcli import cli
from .mcp_http import AGENT, MALLORY, token_for, two_agent_home

TASK = "ticket-42"
RACES = [f"race-{n}" for n in range(6)]


def _credit(agent: str, pid: str, *, task: str = TASK) -> dict[str, Any]:
    return {**credit(pid, agent=agent, amount=1), "task_id": task, "run_id": f"run:{pid}"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = two_agent_home(tmp_path / "home")
    config = load_config(root / "config.json")
    save_config(root / "config.json", config.model_copy(update={"limits": (
        *(Limit(scope="task", subject=task, window_seconds=3600, max_calls=50)
          for task in (TASK, *RACES)),)}))
    return root


@pytest.fixture
def rt(home: Path) -> Iterator[Runtime]:
    with Runtime(home) as runtime:
        yield runtime


def _task_intents(rt: Runtime, task: str = TASK) -> list[str]:
    return [e.payload["agent"] for e in rt.journal.events()
            if e.kind == "action.intent" and e.payload.get("task_id") == task]


def test_a_governed_session_and_langgraph_are_refused(rt: Runtime) -> None:
    victim = GovernedSession(rt, AGENT)
    assert victim.call("demo.ledger.credit", {"account": "acct-1", "amount": 1},
                       HostMeta(task=TASK)).status == "executed"
    head = rt.journal.head()
    mallory = GovernedSession(rt, MALLORY)
    refused = mallory.call("demo.ledger.credit", {"account": "acct-1", "amount": 1},
                           HostMeta(task=TASK))
    assert refused.status == "refused", refused.text  # before: executed
    assert refused.structured["reason_codes"] == ["task_not_yours"]
    # with the host's input too: refused before the input is written into the run
    inputs = mallory.call("demo.ledger.credit", {"account": "acct-1", "amount": 1},
                          HostMeta.model_validate({"task": TASK, "input": {
                              "text": "credit acct-1", "author": "user:emma"}}))
    assert inputs.status == "refused", inputs.text
    from langchain_core.tools import BaseTool

    from cradle_kg.integrations.langgraph import governed_tools

    tool: BaseTool = governed_tools(rt, MALLORY, only=["demo.ledger.credit"])[0]
    answered = tool.invoke({"account": "acct-1", "amount": 1},
                           {"configurable": {"thread_id": "m-1", "cradle-kg/task": TASK}})
    assert str(answered).startswith("refused: `task_id`: task `ticket-42` belongs to"), \
        answered
    assert rt.journal.head() == head  # nothing of the three attempts
    assert _task_intents(rt) == [AGENT]


def test_the_sdk_host_may_run_several_agents_in_one_task(rt: Runtime) -> None:
    """In process, without an agent to speak for, the host's code is not checked; a task
    no `task` limit counts is shared by the agents' doors too."""
    assert rt.submit(_credit(AGENT, "p1")).status == "executed"
    assert rt.submit(_credit(MALLORY, "p2")).status == "executed"
    assert not [e for e in rt.journal.events() if e.kind == "task.claimed"]
    for agent in (AGENT, MALLORY):
        shared = GovernedSession(rt, agent).call(
            "demo.ledger.credit", {"account": "acct-1", "amount": 1},
            HostMeta(task="unlimited"))
        assert shared.status == "executed", shared.text


def test_two_agents_racing_for_a_new_task_one_claims_it(home: Path) -> None:
    with Runtime(home) as one, Runtime(home) as two:
        for n, task in enumerate(RACES):
            got = at_once(partial(one.submit, _credit(AGENT, f"a{n}", task=task),
                                  claim_for=AGENT),
                          partial(two.submit, _credit(MALLORY, f"m{n}", task=task),
                                  claim_for=MALLORY))
            won = [g for g in got if not isinstance(g, Exception)]
            assert len(won) == 1 and won[0].status == "executed", got
            assert [type(g) for g in got if isinstance(g, Exception)] == \
                [TaskOwnershipError], got
            claims = [e.actor for e in one.journal.events()
                      if e.kind == "task.claimed" and e.payload["task_id"] == task]
            assert len(claims) == 1, claims
            assert _task_intents(one, task) == claims


def test_cradle_kg_submit_refuses_another_agents_task(rt: Runtime, home: Path,
                                                       tmp_path: Path) -> None:
    assert rt.submit(_credit(AGENT, "p1"), claim_for=AGENT).status == "executed"
    head = rt.journal.head()
    proposal = tmp_path / "p.json"
    proposal.write_text(json.dumps(_credit(MALLORY, "p-cli")))
    done = cli("submit", str(proposal), "--home", str(home))
    assert done.returncode == 2, (done.stdout, done.stderr)  # before: 0, executed
    assert "belongs to" in done.stderr, done.stderr
    rt.refresh()
    assert rt.journal.head() == head


def test_the_json_api_answers_403(rt: Runtime, home: Path) -> None:
    assert rt.submit(_credit(AGENT, "p1"), claim_for=AGENT).status == "executed"
    head = rt.journal.head()
    with json_api(rt) as api:
        answer = api.post("/api/proposals", json=_credit(MALLORY, "p2"),
                          headers={"Authorization": f"Bearer {token_for(home, MALLORY)}"})
    assert answer.status_code == 403, answer.text  # before: 200, executed
    assert "belongs to" in answer.text, answer.text
    assert rt.journal.head() == head
