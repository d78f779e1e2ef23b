"""Finding: the demo ledger refusing a credit to a closed account (``test_505``) — a refusal
the ledger makes *before* it writes anything — ended as an unknown outcome: the gateway
cannot tell a tool that refused from one that broke in the middle of its write, so the
credit was retried twice under its key, its lookup asked, and it ended ``failed`` with a
human task ("the state of the target is unknown") that a person had to close for a call
that wrote nothing; the agent read "escalated: human task", not why.
Now a tool says "I wrote nothing, and here is why" by raising
:class:`cradle_kg.ToolRefused` (``code``, ``message``) before its write: the observation is
journaled with ``refusal: <code>``, the outcome is ``failed`` with the code and the message
in its reasons, no retry, no lookup, no human task, no compensation; every door reads it
(MCP/LangGraph ``isError`` with ``refused`` and the code, the JSON API's outcome, the
SDK's). The same key again answers the same refusal from the record.
"""

from __future__ import annotations

from typing import Any

from cradle_kg import ToolRefused
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.integrations.calls import GovernedSession, host_meta
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.loop.runtime import Runtime
from cradle_kg.packs.sdk import ToolRefused as SdkToolRefused
from cradle_kg.records import ApprovalStatus, OutcomeStatus
from tests.conftest import proposal

ACCOUNT = "acct-557"


def _close(rt: Runtime, account: str) -> None:
    opened = rt.submit(proposal(f"p557-open-{account}", "demo.ledger.credit",
                                {"account": account, "amount": 5}))
    assert opened.status is OutcomeStatus.EXECUTED, opened.reasons
    waiting = rt.submit(proposal(f"p557-close-{account}", "demo.ledger.close_account",
                                 {"account": account}))
    assert waiting.approval is not None, waiting
    _, closed = rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                                   token=DEMO_TOKENS[APPROVER],
                                   status=ApprovalStatus.APPROVED)
    assert closed is not None and closed.status is OutcomeStatus.EXECUTED, closed


def _kinds(rt: Runtime, action_id: str) -> list[str]:
    return [e.kind for e in rt.journal.events() if e.subject == action_id]


def test_the_sdk_exports_one_refusal() -> None:
    assert SdkToolRefused is ToolRefused
    refused = ToolRefused("account_closed", "account `a` is closed")
    assert (refused.code, refused.message) == ("account_closed", "account `a` is closed")


def test_a_closed_account_credit_is_refused_without_a_human_task(rt: Runtime) -> None:
    _close(rt, ACCOUNT)
    before = len(open_tasks(rt.journal))
    out = rt.submit(proposal("p557-credit", "demo.ledger.credit",
                             {"account": ACCOUNT, "amount": 300}))
    assert out.status is OutcomeStatus.FAILED, out
    assert out.observation is not None and out.action is not None
    # before: observation.refusal did not exist; the outcome said "escalated: human task"
    assert out.observation.refusal == "account_closed", out.observation
    assert any("account_closed" in r and "is closed" in r for r in out.reasons), out.reasons
    assert not any("human task" in r for r in out.reasons), out.reasons
    assert len(open_tasks(rt.journal)) == before  # before: one more ("tool_failed")
    kinds = _kinds(rt, out.action.id)
    assert kinds.count("action.observed") == 1, kinds  # called once: no retry, no lookup
    assert "action.retry" not in kinds and "compensation.requested" not in kinds, kinds
    observed = [e for e in rt.journal.events()
                if e.kind == "action.observed" and e.subject == out.action.id]
    assert observed[0].payload["observation"]["refusal"] == "account_closed"


def test_every_door_reads_the_code_and_the_same_key_answers_the_same(rt: Runtime) -> None:
    _close(rt, ACCOUNT)
    session = GovernedSession(rt, AGENT)
    meta = host_meta({"cradle-kg/idempotency_key": "k557"}, rt)
    first = session.call("demo.ledger.credit", {"account": ACCOUNT, "amount": 40}, meta)
    assert first.is_error and first.status == "failed", first
    assert first.structured["refusal"] == {
        "code": "account_closed",
        "message": f"account `{ACCOUNT}` is closed: it takes no credit"}, first.structured
    assert "refused" in first.text and "account_closed" in first.text, first.text
    assert first.outcome is not None and first.outcome.action is not None
    action_id = first.outcome.action.id
    again = session.call("demo.ledger.credit", {"account": ACCOUNT, "amount": 40}, meta)
    assert again.status == "failed" and again.structured["refusal"] == \
        first.structured["refusal"], again
    assert again.outcome is not None and again.outcome.replayed
    # the tool was not called again: still one observation of the action
    assert _kinds(rt, action_id).count("action.observed") == 1
    # the JSON API and the SDK answer the outcome record: its JSON form carries the code
    as_json: Any = first.outcome.model_dump(mode="json")
    assert as_json["status"] == "failed" and \
        as_json["observation"]["refusal"] == "account_closed", as_json
    assert not open_tasks(rt.journal)


def test_langgraph_reads_an_error_tool_message_with_the_code(rt: Runtime) -> None:
    from langchain_core.messages import AIMessage

    from cradle_kg.integrations.langgraph import GovernedToolNode, tool_name

    _close(rt, ACCOUNT)
    node = GovernedToolNode(rt, AGENT, only=["demo.ledger.credit"])
    asked = AIMessage(content="", tool_calls=[{
        "name": tool_name("demo.ledger.credit"), "args": {"account": ACCOUNT, "amount": 12},
        "id": "call-557"}])
    (message,) = node({"messages": [asked]})["messages"]
    assert message.status == "error", message
    assert "account_closed" in str(message.content), message.content
    assert message.artifact["refusal"]["code"] == "account_closed", message.artifact
    assert not open_tasks(rt.journal)


def test_the_graph_names_the_refusal(rt: Runtime) -> None:
    _close(rt, ACCOUNT)
    out = rt.submit(proposal("p557-graph", "demo.ledger.credit",
                             {"account": ACCOUNT, "amount": 3}))
    assert out.observation is not None and out.observation.refusal == "account_closed"
    rt.sync_graph()
    graph = rt.graph()
    assert graph is not None
    rows = [tuple(str(v) for v in r) for r in graph.query(
        "PREFIX cradle: <https://w3id.org/cradle#> SELECT ?code WHERE { "
        "?o a cradle:Observation ; cradle:refusalCode ?code }")]
    assert len(rows) == 1 and "account_closed" in rows[0][0], rows
