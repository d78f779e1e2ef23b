"""Finding: LangGraph hands a node's resume values to its ``interrupt()`` calls by
position (the first ``interrupt()`` of the node's run takes the first value given, the
second the second), and ``GovernedToolNode`` (and the tools of ``governed_tools``) called
``interrupt()`` only for the calls still waiting. An AI message with two calls that each
need an approval paused at the first; the approver resumed it with ``{"approver",
"token"}`` (approved), the first call ran, and the node paused at the second, which the
approver resumed with a rejection. LangGraph ran the node again: the first call, executed
now, asked nothing, so the second call's ``interrupt()`` was the node's first and was
handed the *first* resume value, the approval given for the other call: the second
account was closed though the approver rejected it (and the rejection was never read).

Now: a call whose proposal waited for an approval keeps its place among the node's
interrupts in every later run (it calls ``interrupt()`` again, and the value it is
handed is the one given for it, read and dropped): each resume value reaches the call
whose interrupt it answered.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.integrations.langgraph import GovernedToolNode
from cradle_kg.records import ApprovalStatus
from tests.scripted_agent import calls, demo_runtime_fixture, scripted_graph

CLOSE = "demo_ledger_close_account"


runtime = demo_runtime_fixture()


def _graph(rt: Runtime) -> Any:
    both = calls(CLOSE, ("c1", {"account": "acct-2"}), ("c2", {"account": "acct-3"}))
    return scripted_graph(GovernedToolNode(rt, AGENT), [both, AIMessage(content="done")])


def _closed(rt: Runtime, run: str) -> list[str]:
    return [e.payload["action"]["target"] for e in rt.journal.events(run_id=run)
            if e.kind == "action.intent"]


def test_each_resume_value_decides_the_call_it_was_given_for(runtime: Runtime) -> None:
    graph = _graph(runtime)
    config = {"configurable": {"thread_id": "t-two"}}
    run = f"run:{AGENT}/lg-t-two"
    paused = graph.invoke({"messages": [HumanMessage("close acct-2 and acct-3")]}, config)
    first = paused["__interrupt__"][0].value
    assert first["tool"] == "demo.ledger.close_account"
    paused = graph.invoke(Command(resume={"approver": APPROVER,
                                          "token": DEMO_TOKENS[APPROVER]}), config)
    second = paused["__interrupt__"][0].value
    assert second["approval_id"] != first["approval_id"]
    done = graph.invoke(Command(resume={
        "approver": APPROVER, "token": DEMO_TOKENS[APPROVER], "decision": "rejected",
        "approval_id": second["approval_id"], "reason": "keep acct-3 open"}), config)
    states = {s.approval.id: s.approval.status for s in runtime.approvals.for_run(run)}
    # before: acct-3 closed under the approval given for acct-2's call, the rejection unread
    assert states[second["approval_id"]] is ApprovalStatus.REJECTED, states
    assert len(_closed(runtime, run)) == 1, _closed(runtime, run)
    assert states[first["approval_id"]] is ApprovalStatus.APPROVED
    results = [m for m in done["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in results] == ["success", "error"], [m.content for m in results]
