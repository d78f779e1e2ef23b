"""Finding: LangGraph hands a node's resume values to its ``interrupt()`` calls by
position, and the prebuilt ``ToolNode`` runs the calls of one AI message at once, in
threads, in no set order. With the tools of ``governed_tools``, an AI message asking to
close two accounts (each needs an approval) paused the graph; the approver resumed it
with ``{"approver", "token"}`` (no ``approval_id``: optional, as documented) for the
closure it was shown — and the value went to whichever call reached its ``interrupt()``
first: the closure of the account the approver was never shown was approved about half
the time (and ran), the one shown left waiting.

Now: a resume value that names no approval decides one only when it can be told which:
while another approval of the run waits, it decides nothing (``approval_refused``, telling
the host to name the ``approval_id`` the interrupt's payload gives); one that names it
decides that one or nothing (``test_225``).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.integrations.langgraph import governed_tools
from cradle_kg.records import ApprovalStatus
from tests.scripted_agent import calls, demo_runtime_fixture, scripted_graph

CLOSE = "demo_ledger_close_account"


runtime = demo_runtime_fixture()


def _graph(rt: Runtime) -> Any:
    both = calls(CLOSE, ("c1", {"account": "acct-2"}), ("c2", {"account": "acct-3"}))
    return scripted_graph(ToolNode(governed_tools(rt, AGENT)), [both, AIMessage(content="done")])


@pytest.mark.parametrize("round_", range(3))
def test_a_resume_naming_no_approval_decides_none_of_two_waiting(runtime: Runtime,
                                                                 round_: int) -> None:
    graph = _graph(runtime)
    config = {"configurable": {"thread_id": f"t-par-{round_}"}}
    run = f"run:{AGENT}/lg-t-par-{round_}"
    paused = graph.invoke({"messages": [HumanMessage("close acct-2 and acct-3")]}, config)
    assert paused["__interrupt__"], paused
    assert {s.approval.status for s in runtime.approvals.for_run(run)} == {
        ApprovalStatus.PENDING}
    graph.invoke(Command(resume={"approver": APPROVER, "token": DEMO_TOKENS[APPROVER]}),
                 config)
    decided = {runtime.approvals.requested_proposal(s.approval).action.target: s.approval.status
               for s in runtime.approvals.for_run(run)
               if s.approval.status is not ApprovalStatus.PENDING}
    # before: one of the two approved by the value (whichever call's interrupt came first)
    assert decided == {}, decided
    intents = [e for e in runtime.journal.events(run_id=run) if e.kind == "action.intent"]
    assert intents == []
