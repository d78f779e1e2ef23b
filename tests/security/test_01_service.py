"""Item 1: no query makes the endpoint open a URL that is not allow-listed.

A real loopback listener counts connections; a real ``cradle-kg serve`` gets a corpus of
SERVICE / LOAD variants over GET, form POST and direct POST. Zero connections, never
the listener's body, never a 500. Run twice: against a default server (no allow-list: workers
are also denied sockets) and against one with an allow-list (the decision on the parsed
query stands alone there) — where the allow-listed IRI does connect, proving the
listener would have seen a leak.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import oneshot

from .sparql_target import LEAK, Listener, Server, serve_data, stop_server

B = "{ ?x ?y ?z }"


def corpus(url: str) -> list[str]:
    host = url.removeprefix("http:").rstrip("/")  # //127.0.0.1:PORT
    svc = [f"SERVICE <{url}> {B}", f"SERVICE SILENT <{url}> {B}", f"service <{url}> {B}",
           f"SeRvIcE sIlEnT <{url}x> {B}"]
    out = [f"SELECT ?x WHERE {{ {s} }}" for s in svc]
    for eol in ("\r", "\n", "\r\n", "\u2028", "\u2029", "\u0085", "\x0b", "\x0c"):
        out.append(f"SELECT ?x WHERE {{ #{eol}SERVICE <{url}> {B} }}")
        out.append(f"SELECT ?x WHERE {{ ?x ?y ?z #{eol}OPTIONAL {{ SERVICE <{url}> {B} }} }}")
    out += [
        f"PREFIX l: <{url}> SELECT ?x WHERE {{ SERVICE l:sparql {B} }}",
        f"PREFIX : <{url}> SELECT ?x WHERE {{ SERVICE SILENT : {B} }}",
        f"BASE <{url}> SELECT ?x WHERE {{ SERVICE <sparql> {B} }}",
        f"SELECT ?x WHERE {{ SERVICE <{host}/rel> {B} }}",
        f"SELECT ?x WHERE {{ BIND(<{url}> AS ?s) SERVICE ?s {B} }}",
        f"SELECT ?x WHERE {{ VALUES ?s {{ <{url}> }} SERVICE SILENT ?s {B} }}",
        f"SELECT ?x WHERE {{ {{ SELECT ?x WHERE {{ SERVICE <{url}> {B} }} }} }}",
        f"SELECT ?x WHERE {{ ?a ?b ?c OPTIONAL {{ SERVICE <{url}> {B} }} }}",
        f"SELECT ?x WHERE {{ {{ ?a ?b ?c }} UNION {{ SERVICE <{url}> {B} }} }}",
        f"SELECT ?x WHERE {{ ?x ?b ?c MINUS {{ SERVICE <{url}> {B} }} }}",
        f"SELECT ?x WHERE {{ ?x ?b ?c FILTER EXISTS {{ SERVICE <{url}> {B} }} }}",
        f"SELECT ?x WHERE {{ ?x ?b ?c FILTER NOT EXISTS {{ SERVICE <{url}> {B} }} }}",
        f"SELECT ?x WHERE {{ ?x ?b ?c BIND(EXISTS {{ SERVICE <{url}> {B} }} AS ?e) }}",
        f"SELECT ?x WHERE {{ GRAPH ?g {{ SERVICE <{url}> {B} }} }}",
        f"SELECT ?x WHERE {{ SERVICE <{url}> {{ SERVICE <{url}> {B} }} }}",
        f"ASK {{ SERVICE <{url}> {B} }}",
        f"CONSTRUCT {{ ?x ?y ?z }} WHERE {{ SERVICE <{url}> {B} }}",
        f"DESCRIBE ?x WHERE {{ SERVICE <{url}> {B} }}",
        f"SELECT ?x WHERE {{ \\u0053ERVICE <{url}> {B} }}",
        f"SELECT ?x WHERE {{ SERVICE <{url.replace(':', chr(92) + 'u003A', 1)}> {B} }}",
        f"SELECT ?x WHERE {{ ?s ?p '#' . #\rSERVICE <{url}> {B} }}",
        f"SELECT ?x FROM <{url}> WHERE {{ ?x ?y ?z }}",
        f"SELECT ?x FROM NAMED <{url}> WHERE {{ GRAPH ?g {{ ?x ?y ?z }} }}",
        f"LOAD <{url}>",
        f"LOAD SILENT <{url}> INTO GRAPH <urn:g>",
        f"#\rLOAD <{url}>",
        f"INSERT {{ ?x ?y ?z }} WHERE {{ SERVICE <{url}> {B} }}",
        f"SELECT * WHERE {{ ?x ?y ?z }} ; LOAD <{url}>",
    ]
    return out


def send_all(server: Server, query: str) -> list[httpx.Response]:
    with httpx.Client(timeout=30) as http:
        return [
            http.get(server.sparql, params={"query": query}),
            http.post(server.sparql, data={"query": query}),
            http.post(server.sparql, content=query.encode(),
                      headers={"content-type": "application/sparql-query"}),
            http.post(server.sparql, data={"update": query}),
            http.post(server.sparql, content=query.encode(),
                      headers={"content-type": "application/sparql-update"}),
        ]


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    lst = Listener()
    yield lst
    lst.close()


@pytest.fixture(scope="module")
def default_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = serve_data(tmp_path_factory.mktemp("svc-default"))
    yield srv
    stop_server(srv)


@pytest.fixture(scope="module")
def allowing_server(listener: Listener,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = serve_data(tmp_path_factory.mktemp("svc-allow"),
                     "--allow-service", listener.url + "allowed")
    yield srv
    stop_server(srv)


def _attack(server: Server, listener: Listener) -> None:
    before = listener.connections
    for query in corpus(listener.url):
        for response in send_all(server, query):
            # 200 only where the engine never reached the SERVICE (an empty join before it)
            assert response.status_code in (200, 400, 403, 415), (
                query, response.status_code, response.text)
            assert LEAK.decode() not in response.text
            assert "traceback" not in response.text.lower()
        assert listener.connections == before, f"the endpoint connected out for {query!r}"


def test_no_variant_connects_out_of_a_default_server(default_server: Server,
                                                     listener: Listener) -> None:
    assert oneshot.get(default_server.url + "/healthz").json()["network_sandboxed"] is True
    _attack(default_server, listener)


@pytest.mark.slow
def test_no_variant_connects_out_of_a_server_with_an_allow_list(allowing_server: Server,
                                                                listener: Listener) -> None:
    _attack(allowing_server, listener)
    # the control: the allow-listed endpoint is called, so the listener does see requests
    before = listener.connections
    ok = oneshot.get(allowing_server.sparql, timeout=30, params={
        "query": f"SELECT ?x WHERE {{ SERVICE <{listener.url}allowed> {{ ?x ?y ?z }} }}"})
    assert ok.status_code == 200, ok.text
    assert listener.connections == before + 1


def test_the_refusal_is_a_403_that_names_the_endpoint(default_server: Server,
                                                      listener: Listener) -> None:
    r = oneshot.get(default_server.sparql, params={
        "query": f"SELECT ?x WHERE {{ #\rSERVICE <{listener.url}> {B} }}"})
    assert r.status_code in (400, 403)
    r = oneshot.get(default_server.sparql, params={
        "query": f"SELECT ?x WHERE {{ SERVICE <{listener.url}> {B} }}"})
    assert r.status_code == 403 and listener.url in r.text
    assert r.headers["content-type"].startswith("text/plain")


def test_a_query_file_with_service_is_refused_by_the_cli(tmp_path: Path,
                                                         listener: Listener) -> None:
    from cradle_kg.errors import QueryError
    from cradle_kg.graph.queries import check_query

    for query in corpus(listener.url):
        if " FROM " in query:  # a dataset clause names graphs; the engine fetches nothing
            continue
        with pytest.raises(QueryError):
            check_query(query)
