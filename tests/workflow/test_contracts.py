"""Step contracts: schema-forced output, per-step tool whitelists, no implicit reads, resume."""

from __future__ import annotations

import json

import pytest

from cradle_kg import Runtime
from cradle_kg.canonical import canonical_json
from cradle_kg.workflow import Engine
from cradle_kg.workflow.examples import MESSAGE_FIELDS_FOR_MODEL, invoice_triage
from tests.workflow.conftest import recorded, triage
from tests.workflow.flows import close_via_balance_step

# the journal on each backend (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

MESSAGE = {"sender": "billing@acme.test", "subject": "Invoice 7", "body": "Please pay.",
           "account": "acct-secret-77", "amount": 731}


def _events(rt: Runtime, run_id: str, kind: str) -> list[dict[str, object]]:
    return [e.payload for e in rt.journal.events(run_id=run_id) if e.kind == kind]


def test_invalid_json_is_retried_once_with_the_validation_error(wf_rt: Runtime) -> None:
    client = recorded("Sure! It is an invoice.", triage("invoice"))
    status = Engine(wf_rt, client=client).start(invoice_triage(), MESSAGE)
    assert status.status == "waiting_human"
    calls = _events(wf_rt, status.run_id, "model.called")
    assert [c["attempt"] for c in calls] == [1, 2]
    retry = calls[1]["request"]["messages"]  # type: ignore[index]
    assert retry[-2] == {"role": "assistant", "content": "Sure! It is an invoice."}
    assert "does not match the JSON schema `Triage`" in retry[-1]["content"]
    assert "json_invalid" in retry[-1]["content"] or "invalid json" in retry[-1]["content"]
    done = _events(wf_rt, status.run_id, "step.completed")
    assert done[0]["output"] == json.loads(triage("invoice"))
    # every call is journaled whole: model id, prompt version, package versions, request
    assert calls[0]["model"] == "qwen2.5-0.5b-instruct"
    assert calls[0]["prompt_version"] == "triage-v1"
    assert "cradle-kg" in calls[0]["packages"]  # type: ignore[operator]
    assert calls[0]["response"]["source"] == "recorded"  # type: ignore[index]


def test_two_invalid_answers_fail_the_step(wf_rt: Runtime) -> None:
    wrong_enum = json.dumps({"category": "spam", "urgency": "low", "justification": "x"})
    status = Engine(wf_rt, client=recorded("not json", wrong_enum)).start(
        invoice_triage(), MESSAGE)
    assert (status.status, status.code, status.step) == ("failed", "output_contract",
                                                         "classify")
    assert len(_events(wf_rt, status.run_id, "model.called")) == 2
    assert "category" in (status.reason or "")


def test_no_implicit_reads(wf_rt: Runtime) -> None:
    client = recorded(triage("invoice"))
    status = Engine(wf_rt, client=client).start(invoice_triage(), MESSAGE)
    request = _events(wf_rt, status.run_id, "model.called")[0]["request"]
    text = canonical_json(request)
    assert "acct-secret-77" not in text and "731" not in text
    user = request["messages"][1]["content"]  # type: ignore[index]
    assert set(json.loads(user)) == set(MESSAGE_FIELDS_FOR_MODEL)


def test_tool_whitelist_is_agent_and_step_intersection(wf_rt: Runtime) -> None:
    status = Engine(wf_rt, client=recorded()).start(close_via_balance_step(),
                                                    {"account": "acct-1"})
    assert (status.status, status.code) == ("failed", "tool_not_allowed")
    started = _events(wf_rt, status.run_id, "step.started")[0]
    assert started["effective_tools"] == ["demo.ledger.balance"]
    assert started["tool"] == "demo.ledger.close_account"
    assert _events(wf_rt, status.run_id, "proposal.received") == []


def test_a_completed_step_is_not_executed_again(wf_rt: Runtime) -> None:
    engine = Engine(wf_rt, client=recorded(triage("invoice")))
    status = engine.start(invoice_triage(), MESSAGE)
    for _ in range(3):
        assert engine.advance(status.run_id).status == "waiting_human"
    assert len(_events(wf_rt, status.run_id, "model.called")) == 1
    assert len(_events(wf_rt, status.run_id, "human.requested")) == 1
    done = engine.decide(status.run_id, "route", {"route": "pay"}, by="user:carol")
    assert done.status == "completed"
    assert done.outputs["pay"]["applied"] is True
    again = engine.advance(status.run_id)
    assert again.status == "completed"
    assert len(_events(wf_rt, status.run_id, "action.intent")) == 1
    decided = _events(wf_rt, status.run_id, "human.decided")[0]
    assert decided["by"] == "user:carol" and decided["delay_seconds"] >= 0  # type: ignore[operator]
