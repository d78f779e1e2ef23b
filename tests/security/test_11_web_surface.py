"""Item 11: the web surface is locked down, and the endpoint keeps the protocol's semantics.

Security headers on the page and everything else; /docs served from this origin only;
a query's own FROM / FROM NAMED wins over the union default graph; relative IRIs
resolve against the endpoint URL (W3C protocol test ``query_content_type_construct``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests import oneshot

from .sparql_target import Server, serve_data, stop_server

EX = "http://example.org/"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = serve_data(tmp_path_factory.mktemp("web"))
    yield srv
    stop_server(srv)


@pytest.mark.parametrize("path", ["/", "/docs", "/static/app.js", "/sparql", "/healthz",
                                  "/openapi.json", "/nowhere"])
def test_every_answer_carries_the_security_headers(server: Server, path: str) -> None:
    r = oneshot.get(server.url + path)
    csp = r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["referrer-policy"] == "no-referrer"


def test_docs_load_nothing_from_elsewhere_and_run_no_inline_script(server: Server) -> None:
    html = oneshot.get(server.url + "/docs").text
    assert "cdn" not in html.lower() and "http" not in html.lower()
    assert not re.search(r"<script>(?!</script>)", html)  # no inline script body
    for link in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert link.startswith("/static/"), link
        assert oneshot.get(server.url + link).status_code == 200
    assert oneshot.get(server.url + "/redoc").status_code == 404  # it loaded a CDN script


def test_a_query_s_own_dataset_clause_wins(server: Server) -> None:
    def count(query: str, **params: str) -> int:
        r = oneshot.get(server.sparql, params={"query": query, **params},
                      headers={"accept": "application/sparql-results+json"})
        assert r.status_code == 200, r.text
        return int(r.json()["results"]["bindings"][0]["n"]["value"])

    everything = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    assert count(everything) == 3  # the union default graph
    assert count("SELECT (COUNT(*) AS ?n) FROM <urn:nothing> WHERE { ?s ?p ?o }") == 0
    assert count("SELECT (COUNT(*) AS ?n) FROM NAMED <urn:nothing> "
                 "WHERE { GRAPH ?g { ?s ?p ?o } }") == 0
    # the protocol's own dataset parameters win over the query's
    assert count("SELECT (COUNT(*) AS ?n) FROM <urn:nothing> WHERE { ?s ?p ?o }",
                 **{"default-graph-uri": "urn:other"}) == 0


def test_relative_iris_resolve_against_the_endpoint(server: Server) -> None:
    # W3C SPARQL 1.1 Protocol: query_content_type_construct
    r = oneshot.post(server.sparql, content=b"CONSTRUCT { <s> <p> 1 } WHERE {}",
                   headers={"content-type": "application/sparql-query",
                            "accept": "application/n-triples"})
    assert r.status_code == 200, r.text
    assert f"<{server.url}/s> <{server.url}/p>" in r.text
