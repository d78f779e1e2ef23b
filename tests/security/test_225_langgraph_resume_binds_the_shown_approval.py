"""A LangGraph resume decides the approval its interrupt showed, and no other.

A graph resumed after ``interrupt()`` runs the interrupted node again from its start.
With the tools of ``governed_tools`` (the ``ToolNode`` route), that second run submitted
a *new* proposal (ids were ``lg-<thread>:<nonce>-<step>``, the step counted again), so:

* an approver's decision given as the resume value (``{"approver", "token"}``) went to
  an approval requested by the second run, one the approver never saw; in a node that
  asks the model again before calling the tool (LangGraph re-runs it whole), the
  model's second, different arguments were the ones approved and run
  (``close_account(acct-3)`` executed after the approver was shown ``acct-2``);
* an approval decided elsewhere (web page, CLI) ran the action, and the resumed call
  then reported it as still waiting, with a second approval request for the same,
  already executed action left in the approvers' inbox.

What must hold: a call made by a tool call is the same proposal when the node runs
again (its id is ``lg-<thread>:<tool call id>``, as ``GovernedToolNode``'s); a resume
value decides only an approval that was already waiting before this run of the node
(an approval this run asked for just now was never shown: refused, nothing journaled,
nothing run); a resume value that names the approval it decides (``approval_id``, as
the interrupt's payload gives it) decides that one or nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.integrations.langgraph import governed_tools
from cradle_kg.records import ApprovalStatus
from tests.scripted_agent import demo_runtime_fixture, scripted_graph

CLOSE = "demo_ledger_close_account"


runtime = demo_runtime_fixture()


def _close(account: str, ident: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": CLOSE, "args": {"account": account},
                                              "id": ident}])


def _tool_node_graph(rt: Runtime, saver: InMemorySaver | None = None,
                     first: tuple[AIMessage, ...] = ()) -> Any:
    return scripted_graph(ToolNode(governed_tools(rt, AGENT)),
                          [*first, _close("acct-2", "c1"), AIMessage(content="done")],
                          saver=saver)


def _intents(rt: Runtime, run: str) -> list[Any]:
    return [e for e in rt.journal.events(run_id=run) if e.kind == "action.intent"]


def test_decided_elsewhere_then_resumed_reads_the_executed_call(runtime: Runtime) -> None:
    graph = _tool_node_graph(runtime)
    config = {"configurable": {"thread_id": "t-web"}}
    paused = graph.invoke({"messages": [HumanMessage("close acct-2")]}, config)
    shown = paused["__interrupt__"][0].value["approval_id"]
    runtime.decide_approval(shown, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                            status=ApprovalStatus.APPROVED)
    done = graph.invoke(Command(resume="decided on the web page"), config)
    closing = [m for m in done["messages"] if isinstance(m, ToolMessage)][-1]
    # before: "awaiting_approval: approval `apr:…` is pending" — a second request
    assert closing.status == "success", closing.content
    assert len(_intents(runtime, f"run:{AGENT}/lg-t-web")) == 1
    pending = [s for s in runtime.approvals.for_run(f"run:{AGENT}/lg-t-web")
               if s.approval.status is ApprovalStatus.PENDING]
    assert pending == [], [s.approval.id for s in pending]


def test_resumed_approval_is_the_one_shown(runtime: Runtime) -> None:
    graph = _tool_node_graph(runtime)
    config = {"configurable": {"thread_id": "t-tok"}}
    paused = graph.invoke({"messages": [HumanMessage("close acct-2")]}, config)
    shown = paused["__interrupt__"][0].value["approval_id"]
    done = graph.invoke(Command(resume={"approver": APPROVER,
                                        "token": DEMO_TOKENS[APPROVER]}), config)
    closing = [m for m in done["messages"] if isinstance(m, ToolMessage)][-1]
    assert closing.status == "success", closing.content
    decided = [s.approval.id for s in runtime.approvals.for_run(f"run:{AGENT}/lg-t-tok")
               if s.approval.status is not ApprovalStatus.PENDING]
    assert decided == [shown]  # before: another approval, requested by the second run


def test_a_second_run_with_other_arguments_is_not_approved(runtime: Runtime) -> None:
    # one node asks the model, then calls the tool: LangGraph runs it whole on a resume,
    # and the model (an injected one, or merely not deterministic) answers differently
    (close,) = governed_tools(runtime, AGENT, only=["demo.ledger.close_account"])
    model = FakeMessagesListChatModel(responses=[_close("acct-2", "c1"),
                                                 _close("acct-3", "c2")])

    def agent(state: MessagesState) -> dict[str, list[Any]]:
        asked = model.invoke(state["messages"])
        out = close.invoke({**asked.tool_calls[0], "type": "tool_call"})
        return {"messages": [asked, out]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    graph = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-swap"}}
    paused = graph.invoke({"messages": [HumanMessage("close acct-2")]}, config)
    shown = runtime.approvals.get(paused["__interrupt__"][0].value["approval_id"]).approval
    assert runtime.approvals.requested_proposal(shown).action.arguments == {"account": "acct-2"}
    done = graph.invoke(Command(resume={"approver": APPROVER,
                                        "token": DEMO_TOKENS[APPROVER]}), config)
    last = done["messages"][-1]
    assert isinstance(last, ToolMessage) and last.status == "error", last.content
    assert "approval_refused" in str(last.content)
    # before: acct-3 closed, approved by a decision given for acct-2
    assert _intents(runtime, f"run:{AGENT}/lg-t-swap") == []
    kinds = [e.kind for e in runtime.journal.events(run_id=f"run:{AGENT}/lg-t-swap")]
    assert "approval.decided" not in kinds, kinds


def test_a_resume_naming_another_approval_decides_nothing(runtime: Runtime) -> None:
    graph = _tool_node_graph(runtime)
    config = {"configurable": {"thread_id": "t-named"}}
    paused = graph.invoke({"messages": [HumanMessage("close acct-2")]}, config)
    shown = paused["__interrupt__"][0].value["approval_id"]
    done = graph.invoke(Command(resume={"approver": APPROVER, "approval_id": "apr:other",
                                        "token": DEMO_TOKENS[APPROVER]}), config)
    closing = [m for m in done["messages"] if isinstance(m, ToolMessage)][-1]
    assert closing.status == "error" and "approval_refused" in str(closing.content)
    assert _intents(runtime, f"run:{AGENT}/lg-t-named") == []
    (state,) = runtime.approvals.for_run(f"run:{AGENT}/lg-t-named")
    assert state.approval.id == shown and state.approval.status is ApprovalStatus.PENDING


def test_a_graph_resumed_elsewhere_submits_the_same_proposal(runtime: Runtime) -> None:
    # the tools built again (another worker of the application, its own count of the
    # thread's calls) resume the same thread: the close was the thread's second call
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t-moved"}}
    credit = AIMessage(content="", tool_calls=[{
        "name": "demo_ledger_credit", "args": {"account": "acct-1", "amount": 5}, "id": "c0"}])
    paused = _tool_node_graph(runtime, saver, (credit,)).invoke(
        {"messages": [HumanMessage("credit acct-1, close acct-2")]}, config)
    shown = paused["__interrupt__"][0].value["approval_id"]
    done = _tool_node_graph(runtime, saver).invoke(Command(resume={
        "approver": APPROVER, "approval_id": shown, "token": DEMO_TOKENS[APPROVER]}), config)
    closing = [m for m in done["messages"] if isinstance(m, ToolMessage)][-1]
    assert closing.status == "success", closing.content
    assert len(_intents(runtime, f"run:{AGENT}/lg-t-moved")) == 2  # the credit, then the close
