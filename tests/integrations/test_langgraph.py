"""A LangGraph agent through ``GovernedToolNode``: real ``langgraph``, real runtime.

The chat model is SCRIPTED (``langchain_core``'s ``FakeMessagesListChatModel``): it emits
the tool calls below in order, with no network. Its second turn is the correction a model
makes after reading the denial's reasons; the test checks that those reasons reached it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.integrations.langgraph import GovernedToolNode, governed_tools
from tests.scripted_agent import scripted_graph

from .conftest import cli
from .test_mcp_stdio import ledger_for_home


def _call(name: str, args: dict[str, Any], ident: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": ident}])


SCRIPT = [
    _call("demo_ledger_credit", {"account": "acct-1", "amount": 5000}, "call-1"),
    _call("demo_ledger_credit", {"account": "acct-1", "amount": 500}, "call-2"),
    _call("demo_ledger_close_account", {"account": "acct-2"}, "call-3"),
    AIMessage(content="done: credited 500 and closed acct-2"),
]


@pytest.fixture
def runtime(home: Path) -> Iterator[Runtime]:
    rt = Runtime(home)
    yield rt
    rt.close()


def _graph(tools: Any, seen: list[list[Any]]) -> Any:
    return scripted_graph(tools, SCRIPT, seen=seen)


def test_denial_correction_and_an_approval_interrupt(runtime: Runtime, home: Path) -> None:
    seen: list[list[Any]] = []
    graph = _graph(GovernedToolNode(runtime, AGENT), seen)
    config = {"configurable": {"thread_id": "t-1"}}
    paused = graph.invoke({"messages": [HumanMessage("credit acct-1, close acct-2")]}, config)

    denial = next(m for m in paused["messages"] if isinstance(m, ToolMessage))
    assert denial.status == "error"
    assert "credits above 1000 need a human operator" in str(denial.content)
    assert "forbidden_by_policy" in str(denial.content)
    # the model's second turn was produced after it had the denial in its context
    assert any(isinstance(m, ToolMessage) and m.status == "error" for m in seen[1])

    (pause,) = paused["__interrupt__"]
    approval_id = pause.value["approval_id"]
    assert approval_id and pause.value["tool"] == "demo.ledger.close_account"

    done = graph.invoke(Command(resume={"approver": APPROVER,
                                        "token": DEMO_TOKENS[APPROVER]}), config)
    closing = [m for m in done["messages"] if isinstance(m, ToolMessage)][-1]
    assert closing.status == "success", closing.content
    assert done["messages"][-1].content.startswith("done")
    assert [(r[1], r[2]) for r in ledger_for_home(home)] == [("acct-1", 500)]
    assert f"run:{AGENT}/lg-t-1" in runtime.journal.run_ids()


def test_an_approval_decided_from_the_cli_then_resumed(runtime: Runtime, home: Path) -> None:
    graph = _graph(GovernedToolNode(runtime, AGENT), [])
    config = {"configurable": {"thread_id": "t-2"}}
    paused = graph.invoke({"messages": [HumanMessage("go")]}, config)
    approval_id = paused["__interrupt__"][0].value["approval_id"]
    out = cli("approvals", "approve", approval_id, "--as", APPROVER, "--once",
              "--home", str(home), extra_env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert out.returncode == 0, out.stderr
    done = graph.invoke(Command(resume="decided elsewhere"), config)
    closing = [m for m in done["messages"] if isinstance(m, ToolMessage)][-1]
    assert closing.status == "success", closing.content


def test_a_bad_approver_token_keeps_the_call_refused(runtime: Runtime) -> None:
    graph = _graph(GovernedToolNode(runtime, AGENT), [])
    config = {"configurable": {"thread_id": "t-3"}}
    graph.invoke({"messages": [HumanMessage("go")]}, config)
    done = graph.invoke(Command(resume={"approver": APPROVER, "token": "wrong"}), config)
    closing = [m for m in done["messages"] if isinstance(m, ToolMessage)][-1]
    assert closing.status == "error" and "approval_refused" in str(closing.content)


def test_governed_tools_in_a_plain_tool_node(runtime: Runtime, home: Path) -> None:
    tools = governed_tools(runtime, AGENT, only=["demo.ledger.credit"])
    graph = _graph(ToolNode(tools), [])
    out = graph.invoke({"messages": [HumanMessage("go")]},
                       {"configurable": {"thread_id": "t-4"}})
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results[0].status == "error" and "credits above 1000" in str(results[0].content)
    assert results[1].status == "success"
