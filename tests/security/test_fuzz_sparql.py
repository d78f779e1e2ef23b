"""A property-based fuzzer over SPARQL requests to a real endpoint.

GET and POST, odd and missing content types, random text, garbage bytes, SPARQL built
from fragments (keywords, brackets, comments ended by odd line breaks, SERVICE / LOAD
toward a loopback listener), deep nesting. Whatever comes in: no 500, no traceback, a
status from the documented set, the loopback listener sees no connection, and the
server's memory (server and workers) stays bounded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import oneshot

from .sparql_target import LEAK, Listener, Server, serve_data, stop_server

#: what /sparql may answer (README, Security model)
DOCUMENTED = {200, 400, 403, 405, 413, 415, 503}
#: server + workers, resident
MEMORY_CAP_BYTES = 3 * 1024 ** 3

LISTENER = Listener()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = serve_data(tmp_path_factory.mktemp("fuzz"))
    yield srv
    stop_server(srv)


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    """One client for every example, each request on a connection of its own (no
    keep-alive: as a client made per request did): a client made per example loaded the
    system's CA bundle each time (``load_verify_locations``, ~80 ms of CPU — half of the
    module's time)."""
    with httpx.Client(timeout=60, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        yield client


def _rss(pid: int) -> int:
    total = 0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


URL = LISTENER.url
FRAGMENTS = [
    "SELECT", "select", "*", "?x", "?s ?p ?o", "WHERE", "{", "}", "(", ")", "[", "]", ".",
    ";", ",", "OPTIONAL", "UNION", "MINUS", "FILTER", "EXISTS", "NOT", "GRAPH ?g", "BIND",
    "VALUES ?s", "AS", "ASK", "CONSTRUCT", "DESCRIBE", "FROM", "FROM NAMED", "LIMIT 1",
    "SERVICE", "service", "SeRvIcE", "SILENT", f"<{URL}>", f"<{URL}x>", "<x>", "<../>",
    f"PREFIX l: <{URL}>", "l:x", "BASE", f"BASE <{URL}>", "LOAD", "INSERT", "DELETE",
    "DATA", "#", "#\r", "#\n", "#\r\n", "#\u2028", "\\u0053ERVICE", "'", '"', "'''", "1",
    "\"x\"@en", "<<", ">>", "<<(", ")>>", "^^", "a", "/", "|", "^", "!", "+", "&&", "||",
    "\x00", "\ud800", "é", "\u202e",
]
sparqlish = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map(" ".join)
deep = st.builds(lambda o, n: o * n, st.sampled_from(["{", "(", "[", "<<(", "{SELECT*"]),
                 st.integers(100, 3000)).map(lambda s: "SELECT * WHERE " + s)
garbage = st.binary(max_size=2000).map(lambda b: b.decode("latin-1"))
queries = st.one_of(sparqlish, deep, garbage, st.text(max_size=500))
CONTENT_TYPES = [None, "application/x-www-form-urlencoded", "application/sparql-query",
                 "application/sparql-update", "application/json", "text/plain",
                 "multipart/form-data; boundary=x", "application/sparql-query; charset=latin1",
                 "garbage", ""]


@pytest.mark.slow
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=queries, method=st.sampled_from(["GET", "POST"]),
       ctype=st.sampled_from(CONTENT_TYPES), accept=st.sampled_from(
           [None, "*/*", "text/csv", "application/ld+json", "x/y;q=abc", ",,,"]),
       param=st.sampled_from(["query", "update", "query", "default-graph-uri"]))
def test_no_request_breaks_the_endpoint(server: Server, http: httpx.Client, query: str,
                                         method: str, ctype: str | None, accept: str | None,
                                         param: str) -> None:
    headers = {} if accept is None else {"accept": accept}
    http.cookies.clear()  # nothing carried from one example to the next
    if method == "GET":
        raw = query[:3000].encode("utf-8", errors="surrogatepass")
        r = http.get(f"{server.sparql}?{param}={quote(raw)}", headers=headers)
    elif ctype == "application/x-www-form-urlencoded":
        raw = query.encode("utf-8", errors="surrogatepass")
        headers["content-type"] = ctype
        r = http.post(server.sparql, content=f"{param}={quote(raw)}".encode(),
                      headers=headers)
    else:
        if ctype is not None:
            headers["content-type"] = ctype
        r = http.post(server.sparql, headers=headers,
                      content=query.encode("utf-8", errors="surrogatepass"))
    assert r.status_code in DOCUMENTED, (r.status_code, r.text[:300])
    assert "traceback" not in r.text.lower()
    assert LEAK.decode() not in r.text
    assert LISTENER.connections == 0
    assert _rss(server.process.pid) < MEMORY_CAP_BYTES


def test_the_server_is_healthy_after_the_fuzzing(server: Server) -> None:
    health = oneshot.get(server.url + "/healthz").json()
    assert health["workers_ready"] >= 1
    assert LISTENER.connections == 0
    assert os.path.exists(f"/proc/{server.process.pid}")
