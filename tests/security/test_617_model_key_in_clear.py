"""A model server's key goes in clear only to this machine, or where the operator says so.

Finding (twenty-seventh review, outbound connections, left open by ``test_610``):
``OpenAICompatibleClient`` sent its key — ``CRADLE_MODEL_API_KEY`` / ``--api-key`` as an
``Authorization: Bearer`` header, or a ``user:key@`` in ``--base-url`` /
``CRADLE_MODEL_BASE_URL`` (basic auth) — over plain ``http://`` to any host: a base URL
``http://vllm.lan:8000/v1`` with a key had every model step carry the key in clear to
anyone on the path, where a remote graph store's credentials are refused off loopback
without an opt-in (``graph_credentials_in_clear``, ``test_372``).

Now the client follows the graph store's rule: credentials over plain ``http://`` to a
host that is not loopback (``graph_config.loopback``, by its name alone, as written: a
trailing dot is another host, ``test_612``) are refused before any request — a
:class:`ModelCredentialsInClearError` (``model_credentials_in_clear``, a ``ModelError``:
the step fails ``model_unavailable``), its hint naming the opt-in
``CRADLE_MODEL_ALLOW_PLAIN_HTTP_CREDENTIALS=1`` (``1`` or ``0``; another value is
refused). Allowed: a loopback host, ``https://``, a server without a key, the opt-in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.errors import ModelCredentialsInClearError
from cradle_kg.workflow import (
    ChatMessage,
    Engine,
    ModelError,
    ModelRequest,
    OpenAICompatibleClient,
)
from cradle_kg.workflow.examples import invoice_triage
from cradle_kg.workflow.model import PLAIN_HTTP_OPT_IN_ENV

from ..workflow.conftest import triage
from ..workflow.recorded_server import RecordedChatServer, completion

KEY = "sk-617-SECRET"
REQUEST = ModelRequest(model="m", messages=(ChatMessage(role="user", content="hi"),),
                       schema_name="T", response_schema={})
MESSAGE = {"sender": "a@b.test", "subject": "Invoice", "body": "Pay 5.", "account": "acct-1",
           "amount": 5}
ANSWER = completion(triage("quote"))


class Recorder:
    """A transport standing for the network: what reached it, answered 200."""

    def __init__(self) -> None:
        self.sent: list[httpx.Request] = []

    def transport(self) -> httpx.MockTransport:
        def answer(request: httpx.Request) -> httpx.Response:
            self.sent.append(request)
            return httpx.Response(200, headers={"Content-Type": "application/json"},
                                  stream=httpx.ByteStream(json.dumps(ANSWER).encode()))
        return httpx.MockTransport(answer)


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.delenv(PLAIN_HTTP_OPT_IN_ENV, raising=False)
    yield monkeypatch


def _complete(base_url: str, api_key: str | None, wire: Recorder) -> None:
    client = OpenAICompatibleClient(base_url, api_key=api_key, transport=wire.transport())
    try:
        client.complete(REQUEST)
    finally:
        client.close()


@pytest.mark.parametrize(("base_url", "api_key"), [
    ("http://vllm.lan:8000/v1", KEY),
    (f"http://alice:{KEY}@vllm.lan:8000/v1", None),
    ("http://10.0.0.7:8000/v1", KEY),
    ("http://localhost.:8000/v1", KEY),       # a trailing dot is looked up (test_612)
    ("http://127.0.0.1.:8000/v1", KEY),
    ("HTTP://vllm.lan/v1", KEY),
])
def test_a_key_over_plain_http_to_another_host_is_refused_before_any_request(
        base_url: str, api_key: str | None, clean_env: pytest.MonkeyPatch) -> None:
    wire = Recorder()
    with pytest.raises(ModelError) as failed:
        _complete(base_url, api_key, wire)
    assert wire.sent == [], [dict(r.headers) for r in wire.sent]  # nothing went out
    error = failed.value
    assert isinstance(error, ModelCredentialsInClearError), error
    assert error.code == "model_credentials_in_clear"
    assert "in clear" in error.message and "loopback" in error.message, error.message
    assert PLAIN_HTTP_OPT_IN_ENV in (error.hint or ""), error.hint
    assert KEY not in error.message + (error.hint or "")


@pytest.mark.parametrize(("base_url", "api_key"), [
    ("https://vllm.lan/v1", KEY),
    ("http://vllm.lan:8000/v1", None),        # no key: plain http anywhere
    ("http://localhost:8000/v1", KEY),
    ("http://127.3.4.5:8000/v1", KEY),
    ("http://[::1]:8000/v1", KEY),
])
def test_tls_loopback_or_no_key_is_sent(
        base_url: str, api_key: str | None, clean_env: pytest.MonkeyPatch) -> None:
    wire = Recorder()
    _complete(base_url, api_key, wire)
    assert len(wire.sent) == 1
    assert (wire.sent[0].headers.get("authorization") == f"Bearer {KEY}") == bool(api_key)


def test_the_opt_in_sends_it(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(PLAIN_HTTP_OPT_IN_ENV, "1")
    wire = Recorder()
    _complete("http://vllm.lan:8000/v1", KEY, wire)
    assert wire.sent and wire.sent[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("value", ["yes", "true", "2", " 1"])
def test_an_opt_in_that_is_not_1_or_0_is_refused(
        value: str, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv(PLAIN_HTTP_OPT_IN_ENV, value)
    wire = Recorder()
    with pytest.raises(ModelCredentialsInClearError) as failed:
        _complete("http://vllm.lan:8000/v1", KEY, wire)
    assert wire.sent == [] and PLAIN_HTTP_OPT_IN_ENV in failed.value.message
    clean_env.setenv(PLAIN_HTTP_OPT_IN_ENV, "0")
    with pytest.raises(ModelCredentialsInClearError):
        _complete("http://vllm.lan:8000/v1", KEY, wire)
    assert wire.sent == []


def test_a_real_loopback_server_still_gets_the_key(clean_env: pytest.MonkeyPatch) -> None:
    server = RecordedChatServer([ANSWER])
    with server.running() as url:
        client = OpenAICompatibleClient(url, api_key=KEY)
        try:
            assert client.complete(REQUEST).content == triage("quote")
        finally:
            client.close()
    assert server.paths == ["/v1/chat/completions"]


def test_a_model_step_fails_closed_and_journals_no_key(
        home: Path, clean_env: pytest.MonkeyPatch) -> None:
    wire = Recorder()
    client = OpenAICompatibleClient("http://vllm.lan:8000/v1", api_key=KEY,
                                    transport=wire.transport())
    with Runtime(home, graph_sync=False) as rt:
        try:
            status = Engine(rt, client=client).start(invoice_triage(), MESSAGE)
        finally:
            client.close()
        events = rt.journal.events(run_id=status.run_id)
        journaled = "\n".join(str(e.payload) for e in events)
    assert wire.sent == []
    assert status.status == "failed", status
    assert "model_unavailable" in journaled and "in clear" in journaled, journaled[:2000]
    assert not any(e.kind == "model.called" for e in events)
    assert KEY not in journaled
