"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1 (recorded replies)."""

from __future__ import annotations

import pytest

from cradle_kg import Runtime
from cradle_kg.workflow import (
    ChatMessage,
    Engine,
    ModelError,
    ModelRequest,
    OpenAICompatibleClient,
)
from cradle_kg.workflow.examples import Triage, invoice_triage
from tests.workflow.conftest import triage
from tests.workflow.recorded_server import RecordedChatServer, completion

MESSAGE = {"sender": "a@b.test", "subject": "Invoice", "body": "Pay 5.", "account": "acct-1",
           "amount": 5}


def test_client_sends_a_json_schema_request_and_reads_the_answer() -> None:
    server = RecordedChatServer([completion(triage("quote"))])
    request = ModelRequest(model="m1", messages=(ChatMessage(role="user", content="hi"),),
                           schema_name="Triage", response_schema=Triage.model_json_schema())
    with server.running() as url:
        client = OpenAICompatibleClient(url, api_key="k")
        response = client.complete(request)
        client.close()
    assert server.paths == ["/v1/chat/completions"]
    sent = server.requests[0]
    assert sent["model"] == "m1" and sent["temperature"] == 0.0
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == Triage.model_json_schema()
    assert response.content == triage("quote") and response.source == "live"
    assert response.usage.completion_tokens == 20
    assert response.raw["id"] == "chatcmpl-recorded"


def test_a_workflow_runs_through_the_http_client_and_retries_once(wf_rt: Runtime) -> None:
    server = RecordedChatServer([completion("I think: invoice"), completion(triage("invoice"))])
    with server.running() as url:
        client = OpenAICompatibleClient(url)
        status = Engine(wf_rt, client=client).start(invoice_triage(), MESSAGE)
        client.close()
    assert status.status == "waiting_human"
    assert len(server.requests) == 2
    assert "does not match the JSON schema" in server.requests[1]["messages"][-1]["content"]
    calls = [e.payload for e in wf_rt.journal.events(run_id=status.run_id)
             if e.kind == "model.called"]
    assert calls[1]["response"]["raw"]["choices"][0]["message"]["content"] == triage("invoice")


def test_server_errors_are_model_errors() -> None:
    request = ModelRequest(model="m", messages=(), schema_name="T", response_schema={})
    with (RecordedChatServer([{"error": "boom"}], status=500).running() as url,
          pytest.raises(ModelError, match="answered 500")):
        OpenAICompatibleClient(url).complete(request)
    with (RecordedChatServer([{"choices": []}]).running() as url,
          pytest.raises(ModelError, match="unexpected envelope")):
        OpenAICompatibleClient(url).complete(request)
    with pytest.raises(ModelError, match="cannot reach"):
        OpenAICompatibleClient("http://127.0.0.1:9/v1", timeout=2).complete(request)
