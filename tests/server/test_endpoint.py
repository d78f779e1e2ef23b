"""The SPARQL endpoint against real clients: SPARQLWrapper and rdflib's SPARQLStore.

A real ``cradle-kg serve`` process on 127.0.0.1 serves a known demo home. Expected
numbers come from the journal (the truth), not from the endpoint.
"""

from __future__ import annotations

import csv
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib
from rdflib.plugins.stores.sparqlstore import SPARQLStore
from SPARQLWrapper import CSV, JSON, JSONLD, N3, POST, POSTDIRECTLY, TSV, TURTLE, XML
from SPARQLWrapper import SPARQLWrapper as Wrapper
from SPARQLWrapper.SPARQLExceptions import QueryBadFormed

from cradle_kg.graph.project import node, run_graph
from cradle_kg.server.front import GRACE_SECONDS
from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from cradle_kg.storage.opening import open_home_journal
from cradle_kg.storage.sparql_scratch import ScratchOxigraph
from tests import oneshot
from tests.graph_backends import read_home_graph

from .conftest import MAX_RESULT_BYTES, TIMEOUT_SECONDS, DemoHome, Server, start_server, stop_server

#: a module whose set-up is long (servers, browsers, packs built): run first
pytestmark = pytest.mark.slow

C = "https://w3id.org/cradle#"
DECISIONS = (f"PREFIX cradle: <{C}> "
             "SELECT ?d ?v WHERE { ?d a cradle:Decision ; cradle:verdict ?v }")
SD = "http://www.w3.org/ns/sparql-service-description#"
# about 800 triples cubed: far beyond the test server's time limit
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"


def journal_events(home: DemoHome) -> list[object]:
    with open_home_journal(home.path) as journal:
        return list(journal.events())


def decided(home: DemoHome) -> int:
    return sum(1 for e in journal_events(home) if e.kind == "decision.made")  # type: ignore[attr-defined]


def wrapper(server: Server, query: str, fmt: str, *, method: str | None = None,
            direct: bool = False) -> Wrapper:
    w = Wrapper(server.sparql)
    w.setQuery(query)
    w.setReturnFormat(fmt)
    if method:
        w.setMethod(method)
    if direct:
        w.setRequestMethod(POSTDIRECTLY)
    return w


# --- SELECT and ASK, every results format -----------------------------------------------


@pytest.mark.parametrize(("method", "direct"), [(None, False), (POST, False), (POST, True)])
def test_select_json_by_get_form_post_and_direct_post(server: Server, demo_home: DemoHome,
                                                      method: str | None, direct: bool) -> None:
    doc = wrapper(server, DECISIONS, JSON, method=method, direct=direct).query().convert()
    assert isinstance(doc, dict)
    assert doc["head"]["vars"] == ["d", "v"]
    assert len(doc["results"]["bindings"]) == decided(demo_home)


def test_select_xml_csv_tsv(server: Server, demo_home: DemoHome) -> None:
    n = decided(demo_home)
    xml = wrapper(server, DECISIONS, XML).query()
    assert xml.response.headers["Content-Type"].startswith("application/sparql-results+xml")
    assert len(xml.convert().getElementsByTagName("result")) == n  # type: ignore[union-attr]
    text = wrapper(server, DECISIONS, CSV).query().convert()
    assert isinstance(text, bytes)
    rows = list(csv.reader(io.StringIO(text.decode())))
    assert rows[0] == ["d", "v"] and len(rows) == n + 1
    tsv = wrapper(server, DECISIONS, TSV).query()
    assert tsv.response.headers["Content-Type"].startswith("text/tab-separated-values")
    lines = tsv.convert().decode().splitlines()  # type: ignore[union-attr]
    assert lines[0] == "?d\t?v" and len(lines) == n + 1


def test_ask_in_json_and_xml(server: Server) -> None:
    yes = f"PREFIX cradle: <{C}> ASK {{ ?d cradle:verdict cradle:Deny }}"
    assert wrapper(server, yes, JSON).query().convert()["boolean"] is True  # type: ignore[index]
    no = "ASK { ?s <urn:x:never> ?o }"
    xml = wrapper(server, no, XML).query().convert()
    assert xml.getElementsByTagName("boolean")[0].firstChild.data == "false"  # type: ignore[union-attr]


# --- CONSTRUCT and DESCRIBE, every graph format -----------------------------------------

CONSTRUCT = (f"PREFIX cradle: <{C}> CONSTRUCT {{ ?d cradle:verdict ?v }} "
             f"WHERE {{ ?d cradle:verdict ?v }}")


@pytest.mark.parametrize("fmt", [TURTLE, N3, XML, JSONLD])
def test_construct_in_turtle_rdfxml_jsonld(server: Server, demo_home: DemoHome,
                                           fmt: str) -> None:
    result = wrapper(server, CONSTRUCT, fmt).query()
    converted = result.convert()
    graph = converted if isinstance(converted, rdflib.Graph) else rdflib.Graph().parse(
        data=converted, format="turtle")  # type: ignore[arg-type]
    assert len(graph) == decided(demo_home)


def test_construct_n_triples_and_describe(server: Server, demo_home: DemoHome) -> None:
    res = oneshot.get(server.sparql, params={"query": CONSTRUCT},
                    headers={"Accept": "application/n-triples"})
    assert res.headers["content-type"].startswith("application/n-triples")
    assert len(res.text.strip().splitlines()) == decided(demo_home)
    action = demo_home.waiting.decision
    assert action is not None
    describe = f"DESCRIBE <https://w3id.org/cradle/id/decision/{action.id.replace(':', '%3A')}>"
    graph = wrapper(server, describe, XML).query().convert()
    assert isinstance(graph, rdflib.Graph)
    assert (None, rdflib.URIRef(C + "verdict"), rdflib.URIRef(C + "RequireApproval")) in graph


# --- dataset, service description -------------------------------------------------------


def graph_size(home: DemoHome, graph: str) -> int:
    store = read_home_graph(home.path)  # whichever store the home uses
    try:
        rows = store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}")
        assert isinstance(rows, ox.QuerySolutions)
        return int(next(iter(rows))[0].value)  # type: ignore[union-attr]
    finally:
        store.close()


def test_default_and_named_graph_parameters(server: Server, demo_home: DemoHome) -> None:
    run = run_graph("run:task-lie")[1:-1]
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"

    def ask(**params: object) -> dict[str, object]:
        res = oneshot.get(server.sparql, params={"query": count, **params},
                        headers={"Accept": "application/sparql-results+json"})
        assert res.status_code == 200, res.text
        return dict(res.json())

    def n(doc: dict[str, object]) -> int:
        return int(doc["results"]["bindings"][0]["n"]["value"])  # type: ignore[index]

    assert n(ask(**{"default-graph-uri": run})) == graph_size(demo_home, run)
    assert n(ask()) > graph_size(demo_home, run)  # the union of every run
    assert n(ask(**{"named-graph-uri": run})) == 0  # named graphs only: empty default
    graphs = oneshot.post(server.sparql, data={
        "query": "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }", "named-graph-uri": run},
        headers={"Accept": "application/sparql-results+json"}).json()
    assert [b["g"]["value"] for b in graphs["results"]["bindings"]] == [run]
    bad = oneshot.get(server.sparql, params={"query": count, "default-graph-uri": "not an iri"})
    assert bad.status_code == 400


def test_service_description(server: Server) -> None:
    res = oneshot.get(server.sparql, headers={"Accept": "text/turtle"})
    assert res.status_code == 200 and res.headers["content-type"].startswith("text/turtle")
    graph = rdflib.Graph().parse(data=res.text, format="turtle")
    service = rdflib.URIRef(server.sparql)
    assert (service, rdflib.RDF.type, rdflib.URIRef(SD + "Service")) in graph
    assert (service, rdflib.URIRef(SD + "endpoint"), service) in graph
    assert (service, rdflib.URIRef(SD + "feature"), rdflib.URIRef(SD + "UnionDefaultGraph")) \
        in graph
    assert (service, rdflib.URIRef(SD + "feature"),
            rdflib.URIRef(SD + "BasicFederatedQuery")) not in graph
    as_xml = oneshot.get(server.sparql, headers={"Accept": "application/rdf+xml"})
    assert len(rdflib.Graph().parse(data=as_xml.text, format="xml")) == len(graph)


# --- rdflib's SPARQLStore ---------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "POST", "POST_FORM"])
def test_rdflib_sparqlstore_select_and_graphs(server: Server, demo_home: DemoHome,
                                              method: str) -> None:
    store = SPARQLStore(server.sparql, method=method, returnFormat="xml")
    union = rdflib.Graph(store)
    verdicts = list(union.query(f"PREFIX cradle: <{C}> SELECT ?d WHERE {{ ?d cradle:verdict ?v }}"))
    assert len(verdicts) == decided(demo_home)
    run = run_graph("run:task-lie")[1:-1]
    one_run = rdflib.Graph(store, identifier=rdflib.URIRef(run))
    assert len(one_run) == graph_size(demo_home, run)
    contexts = {str(g) for g in store.contexts()}
    runs = {run_graph(e.run_id)[1:-1] for e in journal_events(demo_home)}  # type: ignore[attr-defined]
    assert runs <= contexts


def test_rdflib_sparqlstore_triples_and_construct(server: Server, demo_home: DemoHome) -> None:
    store = SPARQLStore(server.sparql, returnFormat="json")
    graph = rdflib.Graph(store)
    denies = list(graph.triples((None, rdflib.URIRef(C + "verdict"), rdflib.URIRef(C + "Deny"))))
    expected = sum(1 for e in journal_events(demo_home) if e.kind == "decision.made"  # type: ignore[attr-defined]
                   and e.payload["decision"]["verdict"] == "deny")  # type: ignore[attr-defined]
    assert len(denies) == expected
    constructed = graph.query(CONSTRUCT)
    assert len(constructed.graph or []) == decided(demo_home)  # type: ignore[arg-type]


# --- what the endpoint refuses ----------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[tuple[str, list[bytes]]]:
    """A local TCP port that records any connection: proof that nothing was fetched."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.settimeout(0.2)
    seen: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            seen.append(conn.recv(1024))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/sparql", seen
    stop.set()
    thread.join(2)
    sock.close()


def test_service_is_refused_and_nothing_is_fetched(server: Server,
                                                   listener: tuple[str, list[bytes]]) -> None:
    url, seen = listener
    for query in (f"SELECT * WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}",
                  f"PREFIX r: <{url[:-6]}> "
                  "SELECT * WHERE { SERVICE SILENT r:sparql { ?s ?p ?o } }",
                  f"SELECT * WHERE {{ BIND(<{url}> AS ?u) SERVICE ?u {{ ?s ?p ?o }} }}"):
        res = oneshot.post(server.sparql, data={"query": query})
        assert res.status_code == 403, res.text
        assert "SERVICE" in res.text
    with pytest.raises(Exception, match="403"):
        wrapper(server, f"SELECT * WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}", JSON).query()
    assert seen == []


def test_update_is_refused_and_changes_nothing(server: Server, demo_home: DemoHome) -> None:
    insert = "INSERT DATA { <urn:x:a> <urn:x:b> <urn:x:c> }"
    refusals = [
        oneshot.post(server.sparql, data={"update": insert}),
        oneshot.post(server.sparql, content=insert,
                   headers={"Content-Type": "application/sparql-update"}),
        oneshot.post(server.sparql, data={"query": insert}),
        oneshot.get(server.sparql, params={"query": "DROP ALL"}),
    ]
    assert [r.status_code for r in refusals] == [403] * 4
    assert all("read-only" in r.text for r in refusals)
    w = Wrapper(server.sparql)
    w.setMethod(POST)
    w.setQuery(insert)
    with pytest.raises(Exception, match="403"):
        w.query()
    ask = wrapper(server, "ASK { <urn:x:a> ?p ?o }", JSON).query().convert()
    assert ask["boolean"] is False  # type: ignore[index]


def test_malformed_queries_get_400_with_the_parser_message(server: Server) -> None:
    with pytest.raises(QueryBadFormed, match="does not parse"):
        wrapper(server, "SELECT * WHERE { ?s ?p }", JSON).query()
    res = oneshot.get(server.sparql, params={"query": "SELEC nothing"})
    assert res.status_code == 400 and "error at 1:1" in res.text
    assert oneshot.post(server.sparql, content="x",
                      headers={"Content-Type": "text/plain"}).status_code == 415
    empty = oneshot.post(server.sparql, content=b"",
                       headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert empty.status_code == 400


def test_runaway_query_is_stopped_and_the_server_lives_on(server: Server,
                                                          demo_home: DemoHome) -> None:
    before = oneshot.get(server.url + "/healthz").json()["workers_replaced"]
    res = oneshot.post(server.sparql, data={"query": RUNAWAY}, timeout=TIMEOUT_SECONDS * 10)
    assert res.status_code == 503
    assert f"{TIMEOUT_SECONDS:g} s limit" in res.text
    after = wrapper(server, DECISIONS, JSON).query().convert()
    assert len(after["results"]["bindings"]) == decided(demo_home)  # type: ignore[index]
    assert oneshot.get(server.url + "/healthz").json()["workers_replaced"] == before + 1
    # past the kill deadline of the runaway: its replacement was not killed for it (the
    # slot kept the runaway's start time, and each new worker was killed at once, dropping
    # the connections the kernel gave it)
    time.sleep(GRACE_SECONDS + 1.0)
    for _ in range(8):
        assert oneshot.get(server.url + "/healthz").status_code == 200
    health = oneshot.get(server.url + "/healthz").json()
    assert (health["workers_replaced"], health["workers_ready"]) == (before + 1, 2)


def test_oversized_result_is_refused(server: Server) -> None:
    everything = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f }"
    res = oneshot.post(server.sparql, data={"query": everything}, timeout=TIMEOUT_SECONDS * 10)
    assert res.status_code == 413
    assert f"{MAX_RESULT_BYTES} byte cap" in res.text


def test_cors_preflight_for_browser_clients(server: Server) -> None:
    # a YASGUI page served elsewhere POSTs a form with an Accept header: CORS must allow it
    res = oneshot.options(server.sparql, headers={
        "Origin": "http://yasgui.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,accept"})
    assert res.status_code == 200
    assert res.headers["access-control-allow-origin"] in ("*", "http://yasgui.example")
    got = oneshot.post(server.sparql, data={"query": "ASK {}"}, headers={
        "Origin": "http://yasgui.example",
        "Accept": "application/sparql-results+json,*/*;q=0.9"})
    assert got.json() == {"head": {}, "boolean": True}
    assert "access-control-allow-origin" in got.headers


def test_named_queries_over_http(server: Server, demo_home: DemoHome) -> None:
    listed = oneshot.get(server.url + "/queries").json()
    assert {"why-allowed", "runs", "run-graph"} <= {q["name"] for q in listed}
    run = demo_home.waiting.run_id
    res = oneshot.get(server.url + "/queries/run-timeline", params={"run": run},
                    headers={"Accept": "application/sparql-results+json"})
    seqs = [int(b["seq"]["value"]) for b in res.json()["results"]["bindings"]]
    assert seqs == [e.seq for e in journal_events(demo_home) if e.run_id == run]  # type: ignore[attr-defined]
    hostile = oneshot.get(server.url + "/queries/why-allowed",
                        params={"action": 'x"} UNION { ?action ?p ?o } #'})
    assert hostile.status_code == 200 and hostile.json()["results"]["bindings"] == []
    assert oneshot.get(server.url + "/queries/why-allowed").status_code == 400
    assert oneshot.get(server.url + "/queries/nope").status_code == 404


def test_a_named_query_answers_a_page(server: Server) -> None:
    """``?limit=&offset=`` page a named query's answer in its own order; a bad page, an
    offset alone, or a query that has its own LIMIT is a 400 naming why."""
    json_accept = {"Accept": "application/sparql-results+json"}

    def runs(**params: str) -> list[str]:
        res = oneshot.get(server.url + "/queries/runs", params=params, headers=json_accept)
        assert res.status_code == 200, res.text
        return [b["run"]["value"] for b in res.json()["results"]["bindings"]]

    whole = runs()
    assert len(whole) >= 4
    assert runs(limit="2") == whole[:2]
    assert runs(limit="2", offset="1") == whole[1:3]
    assert runs(limit="3", offset=str(len(whole))) == []
    for params, said in [({"offset": "2"}, "needs `limit`"), ({"limit": "0"}, "from 1"),
                         ({"limit": "two"}, "whole number")]:
        res = oneshot.get(server.url + "/queries/runs", params=params)
        assert res.status_code == 400 and said in res.text
    own = oneshot.get(server.url + "/queries/policy-in-force",
                    params={"decision": "dec:x", "limit": "5"})
    assert own.status_code == 400 and "cannot be paged" in own.text


# --- serving exported files, and an allow-listed SERVICE --------------------------------


@pytest.fixture(scope="module")
def exported(demo_home: DemoHome, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("exported")
    store = read_home_graph(demo_home.path)
    try:
        every = ox.parse(store.nquads().encode(), format=ox.RdfFormat.N_QUADS)
        quads = [q for q in every if isinstance(q.graph_name, ox.NamedNode)
                 and q.graph_name.value.startswith("https://w3id.org/cradle/run/")]
    finally:
        store.close()
    by_run: dict[str, list[ox.Quad]] = {}
    for q in quads:
        by_run.setdefault(q.graph_name.value, []).append(q)  # type: ignore[union-attr]
    runs = sorted(by_run)
    files = [out / "a.trig", out / "b.nq", out / "c.jsonld"]
    for path, run in zip(files, runs, strict=False):
        path.write_bytes(ox.serialize(by_run[run], format=ox.RdfFormat.from_extension(
            path.suffix[1:])) or b"")
    plain = out / "d.ttl"
    plain.write_text(f"<urn:x:audit> <{C}note> \"exported for an auditor\" .\n")
    return [*files, plain]


def test_serving_files_keeps_named_graphs(exported: list[Path],
                                          tmp_path: Path) -> None:
    srv = start_server([str(p) for p in exported], tmp_path / "files.log")
    try:
        got = oneshot.post(srv.sparql, data={
            "query": "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"},
            headers={"Accept": "application/sparql-results+json"}).json()
        counts = {b["g"]["value"]: int(b["n"]["value"]) for b in got["results"]["bindings"]}
        assert len(counts) == 3
        for path in exported[:3]:
            data = ox.Dataset(ox.parse(path=str(path)))
            graphs = {q.graph_name.value for q in data}  # type: ignore[union-attr]
            assert len(graphs) == 1 and counts[graphs.pop()] == len(data)
        note = wrapper(srv, f"SELECT ?n WHERE {{ ?s <{C}note> ?n }}", JSON).query().convert()
        assert note["results"]["bindings"][0]["n"]["value"] == "exported for an auditor"  # type: ignore[index]
        assert oneshot.get(srv.url + "/api/runs").status_code == 404  # no runtime: no API
        assert oneshot.get(srv.url + "/healthz").json()["mode"] == "files"
    finally:
        stop_server(srv)


def test_an_allow_listed_service_is_called(server: Server, exported: list[Path],
                                           demo_home: DemoHome, tmp_path: Path) -> None:
    srv = start_server([str(exported[-1]), "--allow-service", server.sparql],
                       tmp_path / "fed.log")
    try:
        query = (f"PREFIX cradle: <{C}> SELECT ?d WHERE {{ SERVICE <{server.sparql}> "
                 f"{{ ?d a cradle:Decision }} }}")
        doc = wrapper(srv, query, JSON).query().convert()
        assert len(doc["results"]["bindings"]) == decided(demo_home)  # type: ignore[index]
        sd = rdflib.Graph().parse(data=oneshot.get(srv.sparql).text, format="turtle")
        assert (None, rdflib.URIRef(SD + "feature"), rdflib.URIRef(SD + "BasicFederatedQuery")) \
            in sd
        other = wrapper(srv, "SELECT * WHERE { SERVICE <http://127.0.0.1:9/x> { ?s ?p ?o } }",
                        JSON)
        with pytest.raises(Exception, match="403"):
            other.query()
    finally:
        stop_server(srv)


def test_openapi_documents_the_api(server: Server) -> None:
    spec = oneshot.get(server.url + "/openapi.json").json()
    for path in ("/api/proposals", "/api/approvals", "/api/approvals/{approval_id}/approve",
                 "/api/runs", "/sparql", "/queries/{name}"):
        assert path in spec["paths"], path
    assert "HTTPBearer" in json.dumps(spec["components"]["securitySchemes"])


def test_new_events_are_served_and_a_timeout_reloads_nothing(server: Server,
                                                              demo_home: DemoHome) -> None:
    """Workers read generations of the server's private store (no graph in memory): an
    event appended after start is served, and a worker replaced after a timeout opens the
    newest generation and answers at once."""
    from cradle_kg import Runtime
    from cradle_kg.demo.scenario import AGENT

    def served() -> int:
        got = wrapper(server, DECISIONS, JSON).query().convert()
        return len(got["results"]["bindings"])  # type: ignore[index]

    assert served() == decided(demo_home)
    with Runtime(demo_home.path, graph_sync=False) as rt:
        out = rt.submit({"id": "p-live", "task_id": "task-live", "agent_id": AGENT,
                         "action": {"action_type": "demo.ledger.credit",
                                    "target": "ledger:acct-live",
                                    "arguments": {"account": "acct-live", "amount": 3}}})
    assert out.decision is not None
    assert served() == decided(demo_home)  # the new decision is in
    res = oneshot.post(server.sparql, data={"query": RUNAWAY}, timeout=TIMEOUT_SECONDS * 10)
    assert res.status_code == 503
    # the replacement opens a checkpoint: it is answering well within one query timeout
    ask = f"ASK {{ {node('decision', out.decision.id)} ?p ?o }}"
    answered = wrapper(server, ask, JSON).query().convert()
    assert answered["boolean"] is True  # type: ignore[index]
    assert served() == decided(demo_home)


def test_the_private_store_is_compacted_and_every_worker_moves_to_it(
        server: Server, demo_home: DemoHome) -> None:
    """Once its workers are ready, ``serve`` compacts its private store (a checkpoint of
    the home's store is left in many overlapping files: a scan over every decision of the
    bench's store took 3.3 times the CPU) and publishes a generation of it; no journal
    event announces that one, so the supervisor's count in shared memory tells each worker
    to ask for it at its next query. Same answers before and after."""
    deadline = time.monotonic() + 60
    while (health := oneshot.get(server.url + "/healthz").json())["compaction"] \
            in ("pending", "running"):
        assert time.monotonic() < deadline, health
        time.sleep(0.05)
    assert health["compaction"] == "done"
    for _ in range(100):  # fresh connections: the kernel spreads them over the workers
        got = oneshot.post(server.sparql, data={"query": DECISIONS},
                         headers={"Accept": "application/sparql-results+json"})
        assert len(got.json()["results"]["bindings"]) == decided(demo_home)
        health = oneshot.get(server.url + "/healthz").json()
        if health["workers_on_generation"] == health["workers_ready"] == 2:
            break
    assert health["workers_on_generation"] == health["workers_ready"] == 2, health


@pytest.mark.parametrize("query", [DECISIONS, DECISIONS.replace("SELECT ?d ?v", "ASK"),
                                   "SELECT ?x WHERE { ?x ?y }", "CLEAR ALL"])
def test_the_fast_path_answers_as_the_route_does(server: Server, query: str) -> None:
    """/sparql with an Origin header (a browser) and without: the query workers answer
    both, with the same status, type and body; the browser's answer carries CORS."""
    fast = oneshot.post(server.sparql, data={"query": query}, headers={"Accept": "text/csv"})
    routed = oneshot.post(server.sparql, data={"query": query},
                        headers={"Accept": "text/csv", "Origin": "https://example.org"})
    assert (fast.status_code, fast.headers["content-type"], fast.content) == \
        (routed.status_code, routed.headers["content-type"], routed.content)
    assert "access-control-allow-origin" in routed.headers
    assert fast.headers["x-content-type-options"] == "nosniff"  # the headers still apply


# --- the home's graph in a remote store: the endpoint answers from the journal ------------


def test_a_home_whose_graph_is_remote_is_served_the_same(
        demo_home: DemoHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        fresh_oxigraph: ScratchOxigraph) -> None:
    """With ``CRADLE_GRAPH_URL`` naming a real ``oxigraph serve``, ``serve`` does not
    forward: its private store is the journal projected (the same triples), so the
    endpoint, the named queries and the page answer as for the embedded store."""
    monkeypatch.setenv(GRAPH_URL_ENV, fresh_oxigraph.url)
    remote = start_server(["--home", str(demo_home.path)], tmp_path / "serve.log",
                          demo_home.path)
    try:
        doc = wrapper(remote, DECISIONS, JSON).query().convert()
        assert isinstance(doc, dict)
        assert len(doc["results"]["bindings"]) == decided(demo_home)
        named = oneshot.get(remote.url + "/queries/denied-proposals",
                          headers={"Accept": "application/sparql-results+json"}, timeout=30)
        assert named.status_code == 200, named.text
        denied = sum(1 for e in journal_events(demo_home) if e.kind == "decision.made"
                     and e.payload["decision"]["verdict"] == "deny")  # type: ignore[attr-defined]
        assert denied > 0 and len(named.json()["results"]["bindings"]) >= 1
        assert oneshot.get(remote.url + "/", timeout=30).status_code == 200
    finally:
        stop_server(remote)
