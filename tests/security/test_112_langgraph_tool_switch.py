"""A LangGraph tool call runs the tool the model named, never one named in its arguments.

Finding (sixth attack review): ``governed_tools`` built each LangChain tool around
``def call(_tool_id=spec.id, **arguments)``, and LangChain hands a tool call's arguments to
it as keyword arguments, as the model wrote them (the tool's schema is given as JSON, which
LangChain does not enforce). A model — or an e-mail it read, steering it — calling the
read-only ``demo_ledger_balance`` with ``{"account": "acct-1", "amount": 500,
"_tool_id": "demo.ledger.credit"}`` had the runtime **credit acct-1 with 500**: the tool id
came from the arguments. The host had given that graph node ``only=["demo.ledger.balance"]``
(the tools of this step; the brief's "agent's ∩ step's"), the transcript said
``demo_ledger_balance`` ran, and the journal held a credit (checked on the code before the
fix: ``{'ok': True, 'applied': True, …}``, a ``demo.ledger.credit`` intent journaled).

Now the tool id is bound when the tool is built, outside the arguments: ``_tool_id`` is an
argument like any other, which the balance tool's contract refuses (gate 1,
``invalid_arguments``); nothing but the balance tool is ever proposed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.integrations.langgraph import governed_tools

from .test_119_langgraph_tools_per_thread import _graph

SWITCH = {"account": "acct-1", "amount": 500, "_tool_id": "demo.ledger.credit"}


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    prepare_home(tmp_path / "home")
    rt = Runtime(tmp_path / "home")
    yield rt
    rt.close()


def _actions(rt: Runtime) -> list[str]:
    return [str(e.payload["proposal"]["action"]["action_type"])
            for e in rt.journal.events() if e.kind == "proposal.received"]


def test_a_tool_id_in_the_arguments_switches_no_tool(runtime: Runtime) -> None:
    tools = governed_tools(runtime, AGENT, only=["demo.ledger.balance"])
    assert [t.name for t in tools] == ["demo_ledger_balance"]
    switch = AIMessage(content="", tool_calls=[
        {"name": "demo_ledger_balance", "args": SWITCH, "id": "call-1"}])
    out = _graph(tools, [switch]).invoke({"messages": [HumanMessage("what is on acct-1?")]},
                                         {"configurable": {"thread_id": "t-112"}})
    answer = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert answer.status == "error", answer.content
    assert "_tool_id" in str(answer.content)
    # only the tool the model named was proposed; nothing was credited
    assert _actions(runtime) == ["demo.ledger.balance"]
    assert not [e for e in runtime.journal.events() if e.kind == "action.intent"]


def test_the_tool_called_directly_is_the_same(runtime: Runtime) -> None:
    (tool,) = governed_tools(runtime, AGENT, only=["demo.ledger.balance"])
    answer = tool.invoke(SWITCH)  # a refused call is its text (`handle_tool_error`)
    assert isinstance(answer, str) and "invalid_arguments" in answer and "_tool_id" in answer
    assert _actions(runtime) == ["demo.ledger.balance"]
    # the tool the model named still works
    assert tool.invoke({"account": "acct-1"}) == {"account": "acct-1", "balance": 0}
