"""A LangGraph agent through ``langchain-mcp-adapters`` against ``cradle-kg mcp serve``.

Nothing cradle-kg in the agent: its tools are the MCP server's, loaded by the adapter's
``load_mcp_tools`` from a real ``cradle-kg mcp serve`` subprocess (stdio), run by
LangGraph's own ``ToolNode``. The chat model is SCRIPTED (``langchain_core``'s
``FakeMessagesListChatModel``, no network): a call the policy denies, then the corrected
call a model makes after reading the reasons.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_mcp_adapters")
pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_mcp_adapters.tools import load_mcp_tools
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from cradle_kg.demo.scenario import AGENT

from .conftest import ROOT, env
from .test_mcp_stdio import ledger_for_home


def _call(args: dict[str, Any], ident: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[
        {"name": "demo.ledger.credit", "args": args, "id": ident}])


#: SCRIPTED model turns: denied (above the policy's limit), corrected, done
SCRIPT = [
    _call({"account": "acct-1", "amount": 5000}, "call-1"),
    _call({"account": "acct-1", "amount": 500}, "call-2"),
    AIMessage(content="done: credited 500"),
]


async def _agent_run(home: Path, seen: list[list[Any]]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cradle_kg", "mcp", "serve", "--home", str(home),
                                      "--agent", AGENT], env=env(), cwd=ROOT)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await load_mcp_tools(session)
        assert "demo.ledger.credit" in {t.name for t in tools}
        model = FakeMessagesListChatModel(responses=list(SCRIPT))

        async def agent(state: MessagesState) -> dict[str, list[Any]]:
            seen.append(list(state["messages"]))
            return {"messages": [await model.ainvoke(state["messages"])]}

        g = StateGraph(MessagesState)
        g.add_node("agent", agent)
        g.add_node("tools", ToolNode(tools))
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
        g.add_edge("tools", "agent")
        result: dict[str, Any] = await g.compile().ainvoke(
            {"messages": [HumanMessage("credit acct-1")]})
        return result


def test_an_agent_through_langchain_mcp_adapters(home: Path) -> None:
    seen: list[list[Any]] = []
    result = asyncio.run(_agent_run(home, seen))
    replies = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(replies) == 2
    denial, allowed = replies
    assert denial.status == "error"
    assert "credits above 1000 need a human operator" in str(denial.content)
    assert allowed.status != "error", allowed.content
    # the model's corrected turn came after it had read the denial
    assert any(isinstance(m, ToolMessage) and m.status == "error" for m in seen[1])
    assert result["messages"][-1].content == "done: credited 500"
    amounts = [row for row in ledger_for_home(home) if 500 in row]
    assert len(amounts) == 1 and not [row for row in ledger_for_home(home) if 5000 in row]
