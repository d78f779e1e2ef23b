"""A model server's URL is named without the key it may carry.

Finding (twenty-seventh review, outbound connections): ``--base-url`` /
``CRADLE_MODEL_BASE_URL`` is the only way to give a hosted OpenAI-compatible server a
credential other than a bearer key — ``https://user:key@host/v1`` (httpx sends it as basic
auth) or a key of its own in the query (``?api-key=…``) — and ``OpenAICompatibleClient``
named the server by that URL whole in every :class:`ModelError`. A model server that
answered an error (a 500, a 429, a body not JSON), or could not be reached, had the step
fail ``model_unavailable`` with ``model server `http://alice:S3CRET-pw@…/v1?api-key=…`
answered 500`` journaled in its ``step.failed`` (the journal, its exports, the graph), and
printed. An MCP upstream's URL is named by its origin alone since ``test_267``; a graph
store's without its user and password.

Now the client names its server by its origin (``upstream_http.upstream_name``'s rule:
scheme, host, port): the URL whole is used only to reach it. Nothing of the key in the
error or anywhere in the journal; the server still got the credentials.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.workflow import (
    ChatMessage,
    Engine,
    ModelError,
    ModelRequest,
    OpenAICompatibleClient,
)
from cradle_kg.workflow.examples import invoice_triage

from ..workflow.recorded_server import RecordedChatServer

PASSWORD = "S3CRET-pw-610"
QUERY_KEY = "QK-610-secret"
REQUEST = ModelRequest(model="m", messages=(ChatMessage(role="user", content="hi"),),
                       schema_name="T", response_schema={})
MESSAGE = {"sender": "a@b.test", "subject": "Invoice", "body": "Pay 5.", "account": "acct-1",
           "amount": 5}


def _with_key(url: str) -> str:
    return url.replace("http://", f"http://alice:{PASSWORD}@") + f"?api-key={QUERY_KEY}"


def test_a_model_error_names_the_server_without_its_key() -> None:
    server = RecordedChatServer([], status=500)
    with server.running() as url:
        client = OpenAICompatibleClient(_with_key(url))
        try:
            with pytest.raises(ModelError) as failed:
                client.complete(REQUEST)
        finally:
            client.close()
    said = failed.value.message + str(failed.value.hint or "")
    assert PASSWORD not in said and QUERY_KEY not in said, said
    assert "127.0.0.1" in said  # still named


def test_an_unreachable_model_server_is_named_without_its_key() -> None:
    with RecordedChatServer([]).running() as url:
        pass  # stopped: nothing listens on its port now
    client = OpenAICompatibleClient(_with_key(url))
    try:
        with pytest.raises(ModelError) as failed:
            client.complete(REQUEST)
    finally:
        client.close()
    assert PASSWORD not in failed.value.message and QUERY_KEY not in failed.value.message


def test_a_failed_model_step_journals_no_key(home: Path) -> None:
    server = RecordedChatServer([], status=500)
    with Runtime(home, graph_sync=False) as rt, server.running() as url:
        client = OpenAICompatibleClient(_with_key(url))
        try:
            status = Engine(rt, client=client).start(invoice_triage(), MESSAGE)
        finally:
            client.close()
        journaled = "\n".join(str(e.payload) for e in rt.journal.events(run_id=status.run_id))
    assert status.status == "failed", status  # model_unavailable
    assert PASSWORD not in journaled and QUERY_KEY not in journaled, journaled[:2000]
    assert server.paths and QUERY_KEY in server.paths[0]  # the URL whole reached it
