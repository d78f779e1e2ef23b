"""A decision on an approval is one of the three a person makes, with a reason that is text.

Finding: ``GovernedToolNode`` (LangGraph) decides an approval from the value its graph is
resumed with — application data — and passed that value's ``"decision"`` straight to
``ApprovalStatus(...)``, and the runtime's ``decide_approval`` recorded whatever status it
was given. With the approver's own token:

* ``"decision": "pending"`` journaled an ``approval.decided`` of status ``pending`` and
  ended the waiting proposal as ``repair`` ("changes requested by `user:bob`"), while the
  approval itself stayed pending: it could be decided a second time (two
  ``approval.decided`` events for one approval, the second one approving it);
* ``"decision": "expired"`` journaled an approval ``expired`` by a person, recorded on the
  proposal as "changes requested" — a state only the clock gives, without a reason;
* a ``"reason"`` that is not text ended the graph with a pydantic ``ValidationError`` out
  of ``invoke`` (a traceback, on a rejection); on an approval it was journaled as given
  (``{"x": [1]}``).

In Python, ``decide_approval(..., status="approved")`` (the text, not the enum member)
journaled an approval *and* ended its proposal as "changes requested", and ran nothing.
The command line and the JSON API only ever pass approved, rejected or changes requested,
so only the LangGraph route and Python callers reached it. Now the runtime refuses any
other status, and a reason that is not text, with a typed ``InputError`` before anything
is journaled; the graph's call comes back ``approval_refused`` and the approval still
waits, to be decided once.

A real ``langgraph`` graph over the demo home (its ``close_account`` waits for a person).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.types import Command

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError
from cradle_kg.records import ApprovalStatus

from .inputcli import fresh_home
from .test_16_langgraph_resume import _graph

TOKEN = DEMO_TOKENS[APPROVER]


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = Runtime(fresh_home(tmp_path / "home"), graph_sync=False)
    yield rt
    rt.close()


def _kinds(runtime: Runtime, run: str) -> list[str]:
    return [e.kind for e in runtime.journal.events(run_id=run)]


def _decided(runtime: Runtime, run: str) -> list[str]:
    """What the run's journal says about the approval's fate: its decisions, and every
    outcome its proposal was given (the node's re-run on resume replays the proposal)."""
    return [e.payload["status"] if e.kind == "approval.decided"
            else e.payload["outcome"]["status"]
            for e in runtime.journal.events(run_id=run)
            if e.kind in ("approval.decided", "run.outcome")]


@pytest.mark.parametrize("resume", [
    {"decision": "pending"},
    {"decision": "expired"},
    {"decision": "rejected", "reason": {"x": [1]}},
    {"decision": "changes_requested", "reason": ["fix", "it"]},
], ids=["pending", "expired", "reason-object", "reason-list"])
def test_a_resume_decides_only_a_decision(runtime: Runtime, resume: dict[str, Any]) -> None:
    graph = _graph(runtime)
    config = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke({"messages": [HumanMessage("close acct-2")]}, config)
    approval_id = paused["__interrupt__"][0].value["approval_id"]
    assert _decided(runtime, f"run:{AGENT}/lg-t") == ["awaiting_approval"]

    done = graph.invoke(Command(resume={"approver": APPROVER, "token": TOKEN, **resume}),
                        config)
    closing = [m for m in done["messages"] if isinstance(m, ToolMessage)][-1]
    assert closing.status == "error" and "approval_refused" in str(closing.content)
    # before: `approval.decided` (status pending / expired, or the reason as given) and the
    # proposal's outcome `repair` or `denied` were journaled
    assert set(_decided(runtime, f"run:{AGENT}/lg-t")) == {"awaiting_approval"}
    assert runtime.approvals.get(approval_id).approval.status is ApprovalStatus.PENDING

    # the approval still waits, and is decided once
    runtime.decide_approval(approval_id, approver_id=APPROVER, token=TOKEN,
                            status=ApprovalStatus.APPROVED)
    with pytest.raises(Exception, match="already `approved`"):
        runtime.decide_approval(approval_id, approver_id=APPROVER, token=TOKEN,
                                status=ApprovalStatus.APPROVED)
    fate = [s for s in _decided(runtime, f"run:{AGENT}/lg-t") if s != "awaiting_approval"]
    assert fate == ["approved", "executed"]


@pytest.mark.parametrize("status", ["pending", "expired", "approved!", 3])
def test_the_runtime_records_no_other_status(runtime: Runtime, status: Any) -> None:
    out = runtime.submit({"id": "p1", "task_id": "t", "run_id": "run:py", "agent_id": AGENT,
                          "action": {"action_type": "demo.ledger.close_account",
                                     "target": "ledger:acct-2",
                                     "arguments": {"account": "acct-2"}}})
    assert out.approval is not None
    before = _kinds(runtime, "run:py")
    with pytest.raises(InputError, match="`status`"):
        runtime.decide_approval(out.approval.id, approver_id=APPROVER, token=TOKEN,
                                status=status)
    assert _kinds(runtime, "run:py") == before
    # a decision named by its text is that decision (before: a plain "approved" was
    # journaled as approved, ended the proposal as "changes requested" and ran nothing)
    _, outcome = runtime.decide_approval(out.approval.id, approver_id=APPROVER, token=TOKEN,
                                         status="approved")  # type: ignore[arg-type]
    assert outcome is not None and outcome.status == "executed"
