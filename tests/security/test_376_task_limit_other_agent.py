"""Another agent cannot spend a task's limit over MCP's HTTP transport.

Finding (twenty-second review, left open): a limit of scope ``task`` counts the task id a
proposal names, and on ``cradle-kg mcp serve --transport streamable-http`` that id
(``cradle-kg/task``) comes from the MCP client, with the agent's own token. The host gave
``agent:ledger-assistant`` the task ``ticket-42`` under a limit of 3 calls an hour;
``agent:mallory``, with her own token, sent 3 calls naming ``ticket-42``: the victim's next
call was denied (``rate_limit_task``), and the journal counted Mallory's calls in the
victim's task.

What must hold: a task under a ``task`` limit is the agent's that used it first; another
agent naming it is refused (``task_not_yours``), nothing journaled, and the owner's budget
is its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg.config import Limit, load_config, save_config

from .mcp_http import AGENT, MALLORY, Client, Served, fresh, serve, token_for

pytest.importorskip("mcp")

CREDIT = ("demo.ledger.credit", {"account": "acct-1", "amount": 1})
TASK = {"cradle-kg/task": "ticket-42"}


def limited_home(tmp: Path) -> Path:
    """The two agents' home, with 3 calls an hour for each task."""
    home = fresh(tmp, "home")
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"limits": (
        Limit(scope="task", window_seconds=3600, max_calls=3),)}))
    return home


@pytest.fixture
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = limited_home(tmp_path_factory.mktemp("mcp-task-limit"))
    for running in serve(home):
        running.tokens = {who: token_for(home, who) for who in (AGENT, MALLORY)}
        yield running


def _status(answer: dict[str, object]) -> str:
    result = answer["result"]
    assert isinstance(result, dict), answer
    return str(result["_meta"]["cradle-kg/status"])


def test_another_agent_cannot_spend_a_tasks_limit(served: Served) -> None:
    victim = Client(served.url, served.tokens[AGENT])
    mallory = Client(served.url, served.tokens[MALLORY])
    try:
        assert _status(victim.call(*CREDIT, TASK)) == "executed"
        spent = [mallory.call(*CREDIT, TASK) for _ in range(3)]
        # before: executed, each counted in the victim's task
        assert [_status(a) for a in spent] == ["refused"] * 3, spent
        assert "task_not_yours" in str(spent[0]), spent[0]
        # before: denied, rate_limit_task (Mallory's three calls used the task's limit up)
        assert _status(victim.call(*CREDIT, TASK)) == "executed"
        assert _status(victim.call(*CREDIT, TASK)) == "executed"
        assert _status(victim.call(*CREDIT, TASK)) == "denied"  # its own fourth: the limit
    finally:
        victim.close()
        mallory.close()
    events = served.events()
    in_task = [e.payload["agent"] for e in events if e.kind == "action.intent"
               and e.payload.get("task_id") == "ticket-42"]
    assert in_task == [AGENT] * 3, in_task  # before: Mallory's two in the victim's task
    claims = [(e.actor, e.payload["task_id"]) for e in events if e.kind == "task.claimed"]
    assert claims == [(AGENT, "ticket-42")], claims
