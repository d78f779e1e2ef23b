"""A LangGraph agent on the demo ledger, every tool call governed by cradle-kg.

The chat model here is SCRIPTED (no network, no key): it first asks for a credit the
policy forbids, reads the denial, asks for a smaller one, then closes an account — which
pauses the graph until an approver decides. Swap in any chat model with
``model.bind_tools(node.tools)``.

    pip install 'cradle-kg[langgraph]'
    python examples/langgraph_ledger.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, prepare_home
from cradle_kg.integrations.langgraph import GovernedToolNode


def call(name: str, args: dict[str, Any], ident: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": ident}])


def main() -> None:
    home = Path(tempfile.mkdtemp()) / "home"
    prepare_home(home)
    runtime = Runtime(home)
    tools = GovernedToolNode(runtime, AGENT)
    model = FakeMessagesListChatModel(responses=[  # scripted
        call("demo_ledger_credit", {"account": "acct-1", "amount": 5000}, "c1"),
        call("demo_ledger_credit", {"account": "acct-1", "amount": 500}, "c2"),
        call("demo_ledger_close_account", {"account": "acct-2"}, "c3"),
        AIMessage(content="credited 500 and closed acct-2")])

    def agent(state: MessagesState) -> dict[str, list[Any]]:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    g.add_edge("tools", "agent")
    graph = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "example"}}

    state = graph.invoke({"messages": [HumanMessage("credit acct-1, close acct-2")]}, config)
    for message in state["messages"]:
        print(f"{message.type:>6}: {message.content or message.tool_calls}")
    pause = state["__interrupt__"][0].value
    print(f"paused for approval {pause['approval_id']}; {APPROVER} approves")
    state = graph.invoke(Command(resume={"approver": APPROVER, "approval_id":
                                         pause["approval_id"],
                                         "token": DEMO_TOKENS[APPROVER]}), config)
    print(f"{state['messages'][-2].type:>6}: {state['messages'][-2].content}")
    print(f"{state['messages'][-1].type:>6}: {state['messages'][-1].content}")
    runtime.close()


if __name__ == "__main__":
    main()
