"""A LangGraph agent whose chat model is **scripted** (``langchain_core``'s
``FakeMessagesListChatModel`` answers the listed messages in order: no network, no LLM),
the tests' stand-in for a model behind the real ``langgraph`` graph: agent node → tools node
(``tools_condition``) → agent, with an in-memory checkpointer so that interrupts can be
resumed. Import it after ``pytest.importorskip("langgraph")``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition

from cradle_kg import Runtime
from cradle_kg.demo.scenario import prepare_home


def scripted_graph(tools: Any, responses: Sequence[AIMessage], *,
                   seen: list[list[Any]] | None = None,
                   saver: InMemorySaver | None = None) -> Any:
    """The compiled graph: ``tools`` is the tools node (a ``ToolNode`` or
    ``GovernedToolNode``); the model answers ``responses`` in order; ``seen`` collects the
    messages the model was given at each turn."""
    model = FakeMessagesListChatModel(responses=list(responses))

    def agent(state: MessagesState) -> dict[str, list[Any]]:
        if seen is not None:
            seen.append(list(state["messages"]))
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver or InMemorySaver())


def calls(tool: str, *arguments: tuple[str, dict[str, Any]]) -> AIMessage:
    """One AI message asking for ``tool`` once per ``(call id, arguments)``."""
    return AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": ident}
                                             for ident, args in arguments])


def demo_runtime_fixture() -> Callable[..., Iterator[Runtime]]:
    """A ``runtime`` fixture: a runtime on a fresh demo home in the test's ``tmp_path``
    (``runtime = demo_runtime_fixture()`` in a test module)."""

    @pytest.fixture
    def runtime(tmp_path: Path) -> Iterator[Runtime]:
        home = tmp_path / "home"
        prepare_home(home)
        with Runtime(home) as rt:
            yield rt

    return runtime
