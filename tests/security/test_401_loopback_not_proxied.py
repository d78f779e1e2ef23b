"""A client the runtime builds never sends a request for this machine through a proxy.

Finding (left open by the review of the twenty-second round's own changes): httpx reads
``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY`` from the environment and exempts no
loopback host. A graph store on 127.0.0.1 allowed basic credentials over plain http
(``test_372``: this machine) had them — and every query and update — sent to a plain-http
proxy the environment named, on another machine; so had a model server's bearer key
(``workflow run`` against a local vLLM / Ollama) and an ``mcp proxy --upstream`` on
127.0.0.1 its calls.

Now a loopback host (``localhost``, 127.0.0.0/8, ``::1``, by name alone) is never proxied,
whatever the environment says; another host still goes through the proxy the environment
names (``NO_PROXY`` as before). Each case runs against a real proxy on 127.0.0.1 that
records what reaches it, and the real server behind the URL.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import httpx
import pytest

from cradle_kg.errors import GraphStoreError, ModelError
from cradle_kg.integrations.upstream_http import client_factory
from cradle_kg.storage.graph_config import GraphEndpoints, resolve
from cradle_kg.storage.sparql_http import SparqlHttpStore
from cradle_kg.workflow.model import ChatMessage, ModelRequest, OpenAICompatibleClient

from .sparql_target import answering

SECRET = "Gr4phS3cret"
EMPTY = b'{"head":{"vars":["seq","journal"]},"results":{"bindings":[]}}'
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@contextlib.contextmanager
def recorder(answer: bytes) -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 answering ``answer`` (JSON), noting each request's line and
    its ``Authorization``: its base URL and what it saw."""
    seen: list[str] = []
    with answering(answer, "application/json", seen=seen, noting="Authorization",
                   with_line=True) as base:
        yield base, seen


@pytest.fixture
def proxied(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The environment names a proxy (a recording server) for every scheme: what reached it."""
    with recorder(b"{}") as (proxy, seen):
        for name in PROXY_VARIABLES:
            monkeypatch.delenv(name, raising=False)
            monkeypatch.delenv(name.lower(), raising=False)
        for name in PROXY_VARIABLES[:3]:
            monkeypatch.setenv(name, proxy)
        yield seen


def test_a_loopback_graph_store_is_not_proxied(proxied: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRADLE_GRAPH_PASSWORD", SECRET)
    answers: list[int] = []
    with recorder(EMPTY) as (base, store_saw):
        for host in (base, base.replace("127.0.0.1", "localhost")):
            store = SparqlHttpStore(resolve(GraphEndpoints.model_validate(
                {"query": f"{host}/query", "update": f"{host}/update",
                 "store": f"{host}/store", "user": "cradle"})))
            try:
                with contextlib.suppress(GraphStoreError):  # the proxy's `{}`, before
                    answers.append(store.projected_seq())
            finally:
                store.close()
    # before: the query and its basic credentials went to the proxy
    assert proxied == []
    assert answers == [0, 0]
    assert store_saw and all(seen.endswith("Basic Y3JhZGxlOkdyNHBoUzNjcmV0")
                             for seen in store_saw), store_saw


def test_another_host_still_goes_through_the_environment_proxy(proxied: list[str]) -> None:
    store = SparqlHttpStore(resolve(GraphEndpoints.model_validate(
        {"query": "http://kg.internal:7878/query", "update": "http://kg.internal:7878/u",
         "store": "http://kg.internal:7878/store"})))
    try:
        with pytest.raises(GraphStoreError):
            store.projected_seq()  # the recorder answers `{}`: not a SPARQL result
    finally:
        store.close()
    assert proxied and proxied[0].startswith("POST http://kg.internal:7878/query"), proxied


def test_a_loopback_model_server_is_not_proxied(proxied: list[str]) -> None:
    request = ModelRequest(model="m", messages=(ChatMessage(role="user", content="hi"),),
                           schema_name="s", response_schema={"type": "object"})
    with recorder(b"{}") as (base, server_saw):
        client = OpenAICompatibleClient(f"{base}/v1", api_key=SECRET)
        try:
            with pytest.raises(ModelError):
                client.complete(request)  # `{}` is no completion
        finally:
            client.close()
    # before: the request and its bearer key went to the proxy
    assert proxied == []
    assert server_saw == [f"POST /v1/chat/completions HTTP/1.1 Bearer {SECRET}"], server_saw


def test_a_loopback_mcp_upstream_is_not_proxied(proxied: list[str]) -> None:
    async def call(url: str) -> None:
        make = client_factory(url, cap=1 << 20, deadline=10.0)
        async with make(headers={"Authorization": f"Bearer {SECRET}"}) as client:
            with contextlib.suppress(httpx.HTTPError):
                await client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})

    with recorder(b'{"jsonrpc":"2.0","id":1,"result":{}}') as (base, upstream_saw):
        asyncio.run(call(f"{base}/mcp"))
    # before: the call went to the proxy
    assert proxied == []
    assert upstream_saw == [f"POST /mcp HTTP/1.1 Bearer {SECRET}"], upstream_saw
