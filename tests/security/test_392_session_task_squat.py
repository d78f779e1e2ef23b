"""Another agent cannot squat the task a governed session derives for its agent.

Finding (review of the twenty-second round's changes, part two): a task a ``task`` limit
counts became its first agent's (``test_376``), and a session's task, when its host names
none, was the session's id — for a LangGraph graph thread ``lg-<thread id>``, guessable
(``lg-1``, a user id), as its run was before ``test_235``. Mallory, with her own token,
named ``lg-1`` first (MCP's ``cradle-kg/task``, the JSON API's ``task_id``): the task was
hers, and every call of ``agent:ledger-assistant``'s graph thread ``1`` was refused
(``task_not_yours``) — a denial of service that the claim itself made.

What must hold: a session's own task is in its agent's namespace, as its run is (the
session's run id, ``run:<agent id>/<session>``); a task in ``run:<identity>/…`` is that
identity's alone, claimed or not, at every door where an agent names its task.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.config import Limit, load_config, save_config
from cradle_kg.errors import TaskOwnershipError
from cradle_kg.integrations.calls import GovernedSession, HostMeta

from .homes import credit
from .mcp_http import AGENT, MALLORY, two_agent_home

pytest.importorskip("langgraph")

CREDIT = ("demo.ledger.credit", {"account": "acct-1", "amount": 1})
#: the run (and now the task) LangGraph derives for AGENT's graph thread "1"
THREAD_RUN = f"run:{AGENT}/lg-1"


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    home = two_agent_home(tmp_path / "home")
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"limits": (
        Limit(scope="task", window_seconds=3600, max_calls=20),)}))
    with Runtime(home, graph_sync=False) as runtime:
        yield runtime


def _thread_call(rt: Runtime) -> str:
    from langchain_core.tools import BaseTool

    from cradle_kg.integrations.langgraph import governed_tools

    tool: BaseTool = governed_tools(rt, AGENT, only=[CREDIT[0]])[0]
    return str(tool.invoke(CREDIT[1], {"configurable": {"thread_id": "1"}}))


def _tasks(rt: Runtime, agent: str) -> list[Any]:
    return [e.payload.get("task_id") for e in rt.journal.events()
            if e.kind == "action.intent" and e.payload["agent"] == agent]


def test_a_graph_threads_task_cannot_be_squatted(rt: Runtime) -> None:
    mallory = GovernedSession(rt, MALLORY)
    # the task thread 1's calls had: Mallory names it first (no one's namespace)
    assert mallory.call(*CREDIT, HostMeta(task="lg-1")).status == "executed"
    answered = _thread_call(rt)
    assert not answered.startswith("refused"), answered  # before: task `lg-1` belongs to
    assert _tasks(rt, AGENT) == [THREAD_RUN]
    head = rt.journal.head()
    # the thread's own task, at every door an agent names its task; thread 2's before its
    # first call too (in the agent's namespace, claimed or not)
    for task in (THREAD_RUN, f"run:{AGENT}/lg-2"):
        squat = mallory.call(*CREDIT, HostMeta(task=task))
        assert squat.structured["reason_codes"] == ["task_not_yours"], squat.text
        with pytest.raises(TaskOwnershipError):  # the JSON API's path
            rt.submit({**credit("p-squat", agent=MALLORY, amount=1, task=task),
                       "run_id": "run:p-squat"}, claim_for=MALLORY)
    assert rt.journal.head() == head  # nothing of the attempts
    assert _tasks(rt, MALLORY) == ["lg-1"]


def test_a_sessions_own_task_is_its_run(rt: Runtime) -> None:
    session = GovernedSession(rt, AGENT)
    assert session.call(*CREDIT).status == "executed"
    assert _tasks(rt, AGENT) == [session.run_id]
