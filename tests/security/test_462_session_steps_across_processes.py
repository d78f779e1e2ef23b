"""Finding: a call that names no idempotency key is keyed by the runtime from its agent,
tool, run, *step*, attempt and arguments (``idem:…``), so two calls of one run at the same
step with the same arguments are one effect. The integrations numbered steps per process:
an MCP session from 1 (also when it names an existing run with ``cradle-kg/run``: a client
that reconnects to its run), a LangGraph thread's tools from 1 in each process (the run is
the thread's, ``run:<agent>/lg-<thread>``, kept across restarts), ``GovernedToolNode`` from
the messages its graph holds. After a restart or a reconnect, the agent's first call in
the run — "credit acct-1 5" again, a new request — took step 1 again, was answered as the
earlier call's replay (``replayed: true``, its output: "applied") and never ran: the
money was never credited, and the model was told it was.

Now: a session's first call into a run numbers its steps after the highest step the run
holds (``Journal.max_step``: one query per session and run), and a tool call made again
(LangGraph's resume) keeps the step its proposal was recorded with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.prebuilt import ToolNode
from mcp import ClientSession

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.integrations.langgraph import GovernedToolNode, governed_tools
from tests.integrations.conftest import mcp_home
from tests.integrations.test_mcp_stdio import credit, ledger_for_home, run
from tests.scripted_agent import calls, demo_runtime_fixture, scripted_graph

RUN = f"run:{AGENT}/book"


def _intents(rt: Runtime, run_id: str) -> int:
    return sum(1 for e in rt.journal.events(run_id=run_id) if e.kind == "action.intent")


def test_a_reconnected_mcp_session_in_its_run_is_not_a_replay(tmp_path: Path) -> None:
    home = mcp_home(tmp_path / "home")
    seen: list[Any] = []

    async def one_call(s: ClientSession) -> None:
        got = await s.call_tool("demo.ledger.credit", credit("acct-1", 5),
                                meta={"cradle-kg/run": RUN})
        seen.append((got.isError, (got.meta or {}).get("cradle-kg/replayed")))

    run(home, one_call)
    run(home, one_call)  # the client reconnects to its run: a new `mcp serve` session
    # before: [(False, False), (False, True)] — the second credit answered as a replay
    assert seen == [(False, False), (False, False)], seen
    assert len(ledger_for_home(home)) == 2


runtime = demo_runtime_fixture()


def _graph(node: Any, call_id: str) -> Any:
    asked = calls("demo_ledger_credit", (call_id, {"account": "acct-1", "amount": 5}))
    return scripted_graph(node, [asked, AIMessage(content="done")])


@pytest.mark.parametrize("route", ["tool_node", "governed_tool_node"])
def test_a_thread_continued_by_another_process_runs_its_new_call(runtime: Runtime,
                                                                 route: str) -> None:
    config = {"configurable": {"thread_id": f"t-{route}"}}
    done: list[ToolMessage] = []
    for call_id in ("call-1", "call-2"):  # each graph built anew: a restarted application
        node = (ToolNode(governed_tools(runtime, AGENT)) if route == "tool_node"
                else GovernedToolNode(runtime, AGENT))
        out = _graph(node, call_id).invoke(
            {"messages": [HumanMessage("credit acct-1 with 5")]}, config)
        done += [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in done] == ["success", "success"], [m.content for m in done]
    # before: 1 — the second credit was the first's replay, reported as applied
    assert _intents(runtime, f"run:{AGENT}/lg-t-{route}") == 2
