"""Virtuoso Open Source (7.2, Debian's ``virtuoso-opensource``) as a SPARQL 1.1 store: the
launcher, and what a client must know about the engine — each finding of the README's
"Virtuoso" subsection is a test here, against the real server.

Every test writes into graphs of its own (``urn:x-test:<test>:…``) on the module's server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import rdflib

from cradle_kg.storage.virtuoso_scratch import ScratchVirtuoso, VirtuosoUnavailable
from tests import oneshot

#: a module whose set-up is long (servers, browsers, packs built): run first
pytestmark = pytest.mark.slow

XSD = "http://www.w3.org/2001/XMLSchema#"
JSON = "application/sparql-results+json"


class Client:
    """The few requests a SPARQL 1.1 client makes, with the scratch server's basic auth."""

    def __init__(self, server: ScratchVirtuoso) -> None:
        self.e = server.endpoints
        self.http = httpx.Client(timeout=60, auth=(self.e.user, self.e.password))

    def update(self, text: str) -> httpx.Response:
        return self.http.post(self.e.update, data={"update": text})

    def select(self, text: str) -> list[dict[str, dict[str, str]]]:
        answer = self.http.post(self.e.query, data={"query": text}, headers={"Accept": JSON})
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith(JSON)
        rows: list[dict[str, dict[str, str]]] = answer.json()["results"]["bindings"]
        return rows

    def objects(self, graph: str) -> dict[str, dict[str, str]]:
        """subject -> the JSON term of its object, in ``graph``."""
        return {r["s"]["value"]: r["o"] for r in
                self.select(f"SELECT ?s ?o WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}")}

    def count(self, graph: str) -> int:
        rows = self.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}")
        return int(rows[0]["n"]["value"])

    def gsp(self, method: str, params: dict[str, str], body: bytes | None = None,
            content_type: str = "application/n-triples", **kw: Any) -> httpx.Response:
        headers = {"Content-Type": content_type} if body is not None else {
            "Accept": "application/n-triples"} if method == "GET" else {}
        return self.http.request(method, self.e.graph_store, params=params, content=body,
                                 headers=headers, **kw)


@pytest.fixture(scope="module")
def virtuoso() -> Iterator[ScratchVirtuoso]:
    """A server of this module's own: these tests pin the engine's behaviour, and one of
    them leaves a request hanging (the direct POST of a query)."""
    server = ScratchVirtuoso()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def c(virtuoso: ScratchVirtuoso) -> Client:
    return Client(virtuoso)


@pytest.fixture
def g(virtuoso: ScratchVirtuoso) -> Iterator[str]:
    """A graph IRI no other test uses, dropped (with its ``-big`` sibling) afterwards: the
    module's server would otherwise keep every test's triples, and Virtuoso lists its
    graphs (``SELECT DISTINCT ?g``) by scanning them all — 30-70 s once the large-result
    tests have run, where an emptied server answers at once."""
    graph = f"urn:x-test:{uuid.uuid4().hex}"
    yield graph
    e = virtuoso.endpoints
    dropped = oneshot.post(e.update, auth=(e.user, e.password), timeout=120.0, data={
        "update": f"DROP SILENT GRAPH <{graph}> ; DROP SILENT GRAPH <{graph}-big>"})
    assert dropped.status_code == 200, dropped.text


# -- the launcher ----------------------------------------------------------------------


def test_the_scratch_server_needs_its_credentials(virtuoso: ScratchVirtuoso, g: str) -> None:
    e = virtuoso.endpoints
    assert e.query.startswith("http://127.0.0.1:") and e.update.endswith("/sparql-auth")
    assert e.graph_store.endswith("/sparql-graph-crud-auth")
    write = {"update": f"INSERT DATA {{ GRAPH <{g}> {{ <urn:a> <urn:p> 1 }} }}"}
    assert oneshot.post(e.update, data=write).status_code == 401
    assert oneshot.post(e.update, data=write, auth=(e.user, "wrong")).status_code == 401
    assert oneshot.post(e.update, data=write, auth=("dba", "dba")).status_code == 401
    # the anonymous endpoint reads, and refuses every write
    refused = oneshot.post(virtuoso.anonymous_query_url, data={"query": write["update"]})
    assert refused.status_code >= 400 and "SECURITY" in refused.text
    assert oneshot.post(e.update, data=write, auth=(e.user, e.password)).status_code == 200
    read = oneshot.post(virtuoso.anonymous_query_url, headers={"Accept": JSON},
                      data={"query": f"ASK {{ GRAPH <{g}> {{ <urn:a> <urn:p> 1 }} }}"})
    assert read.json()["boolean"] is True


def test_a_missing_binary_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIRTUOSO_BIN", "/nonexistent/virtuoso-t")
    with pytest.raises(VirtuosoUnavailable, match="VIRTUOSO_BIN"):
        ScratchVirtuoso()


def test_stop_ends_the_server_and_removes_its_files_and_the_row_cap_is_silent() -> None:
    """A second server with a small ``ResultSetMaxRows``: Virtuoso cuts a result at the
    cap with a 200 and no sign of it (Debian's ini sets 10,000), hence the launcher's
    10 M; then ``stop`` leaves no process and no directory behind."""
    server = ScratchVirtuoso(max_rows=100)
    try:
        c = Client(server)
        triples = " ".join(f'<urn:s{i}> <urn:p> "{i}" .' for i in range(150))
        assert c.update(f"INSERT DATA {{ GRAPH <urn:cap> {{ {triples} }} }}").status_code == 200
        rows = c.select("SELECT ?s WHERE { GRAPH <urn:cap> { ?s ?p ?o } }")
        assert len(rows) == 100  # of 150, and no error
        assert c.count("urn:cap") == 150
    finally:
        pid, folder = server.pid, server.dir
        server.stop()
    assert not server.running() and not folder.exists()
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        import os

        os.kill(pid, 0)


def test_the_session_server_returns_large_results_whole(c: Client, g: str) -> None:
    blocks = " ;\n".join(
        f"INSERT DATA {{ GRAPH <{g}> {{ "
        + " ".join(f'<urn:s{k}-{i}> <urn:p> "{i}" .' for i in range(2000)) + " } }"
        for k in range(6))
    assert c.update(blocks).status_code == 200
    assert len(c.select(f"SELECT ?s WHERE {{ GRAPH <{g}> {{ ?s ?p ?o }} }}")) == 12_000


# -- SPARQL Update ---------------------------------------------------------------------


def test_a_graph_block_of_insert_data_holds_fewer_than_5000_triples(c: Client, g: str) -> None:
    """The SPARQL compiler runs out of parser stack at about 4,990 triples in one block
    (`memory exhausted`, 400): a client splits a batch into operations (or GRAPH blocks)
    of a few thousand, which may share one request."""
    def block(n: int) -> str:
        return f"GRAPH <{g}> {{ " + " ".join(
            f'<urn:b{n}-{i}> <urn:p> "{i}" .' for i in range(n)) + " }"

    too_big = c.update(f"INSERT DATA {{ {block(5000)} }}")
    assert too_big.status_code == 400 and "memory exhausted" in too_big.text
    assert c.count(g) == 0
    assert c.update(f"INSERT DATA {{ {block(4000)} }}").status_code == 200
    many_blocks = " ".join(
        f"GRAPH <{g}> {{ " + " ".join(f'<urn:m{k}-{i}> <urn:p> "{i}" .' for i in range(1500))
        + " }" for k in range(4))
    assert c.update(f"INSERT DATA {{ {many_blocks} }}").status_code == 200
    assert c.count(g) == 10_000


def test_one_update_request_is_atomic_only_against_compile_errors(c: Client, g: str) -> None:
    """A request that does not compile (syntax, a literal out of range) changes nothing;
    but an operation failing *at run time* leaves the operations before it applied and
    skips those after it — a multi-operation request is not a transaction. A client
    puts its watermark in the last operation and makes every batch idempotent."""
    bad_syntax = c.update(f"INSERT DATA {{ GRAPH <{g}> {{ <urn:a> <urn:p> 1 }} }} ;"
                          f"INSERT DATA {{ GRAPH <{g}> {{ <urn:a> <urn:p> }} }}")
    assert bad_syntax.status_code == 400
    bad_literal = c.update(f"INSERT DATA {{ GRAPH <{g}> {{ <urn:a> <urn:p> 1 }} }} ;"
                           f'INSERT DATA {{ GRAPH <{g}> {{ <urn:b> <urn:p> '
                           f'"123456789012345678901234"^^<{XSD}integer> }} }}')
    assert bad_literal.status_code == 400 and "SR341" in bad_literal.text
    assert c.count(g) == 0
    runtime = c.update(f"INSERT DATA {{ GRAPH <{g}> {{ <urn:a> <urn:p> 1 }} }} ;"
                       f"DROP GRAPH <{g}-never-created> ;"
                       f"INSERT DATA {{ GRAPH <{g}> {{ <urn:b> <urn:p> 2 }} }}")
    assert runtime.status_code == 500
    assert set(c.objects(g)) == {"urn:a"}  # the first applied, the third never ran


def test_graphs_are_dropped_silently_or_cleared_one_by_one(c: Client, g: str) -> None:
    """``DROP GRAPH`` fails for a graph made by inserting into it (only ``CREATE GRAPH``
    makes one "explicitly"); ``DROP SILENT`` and ``CLEAR`` remove its triples;
    ``CLEAR ALL`` answers 200 and removes nothing; ``CLEAR DEFAULT`` is refused."""
    insert = f"INSERT DATA {{ GRAPH <{g}> {{ <urn:a> <urn:p> 1 }} }}"
    assert c.update(insert).status_code == 200
    dropped = c.update(f"DROP GRAPH <{g}>")
    assert dropped.status_code == 500 and "explicitly created" in dropped.text
    assert c.count(g) == 1
    assert c.update("CLEAR ALL").status_code == 200
    assert c.count(g) == 1
    assert c.update("CLEAR DEFAULT").status_code == 400
    assert c.update(f"DROP SILENT GRAPH <{g}>").status_code == 200
    assert c.count(g) == 0
    assert c.update(insert).status_code == 200
    assert c.update(f"CLEAR GRAPH <{g}>").status_code == 200
    assert c.count(g) == 0


# -- terms -----------------------------------------------------------------------------

ROUND_TRIP = [  # (written, what comes back: (lexical form, datatype or "@lang" or None))
    (f'"2026-12-01T10:00:00Z"^^<{XSD}dateTime>', ("2026-12-01T10:00:00Z", XSD + "dateTime")),
    (f'"2026-12-01T10:00:00.123456Z"^^<{XSD}dateTime>',
     ("2026-12-01T10:00:00.123456Z", XSD + "dateTime")),
    (f'"2026-12-01T10:00:00+02:00"^^<{XSD}dateTime>',
     ("2026-12-01T10:00:00+02:00", XSD + "dateTime")),
    (f'"2026-12-01T10:00:00"^^<{XSD}dateTime>', ("2026-12-01T10:00:00", XSD + "dateTime")),
    # changed: an offset of +00:00 becomes Z, a fraction gets three digits
    (f'"2026-12-01T10:00:00.5+00:00"^^<{XSD}dateTime>',
     ("2026-12-01T10:00:00.500Z", XSD + "dateTime")),
    (f'"42"^^<{XSD}integer>', ("42", XSD + "integer")),
    (f'"-9223372036854775808"^^<{XSD}integer>', ("-9223372036854775808", XSD + "integer")),
    (f'"007"^^<{XSD}integer>', ("7", XSD + "integer")),  # canonical form
    (f'"1.50"^^<{XSD}decimal>', ("1.5", XSD + "decimal")),
    (f'"true"^^<{XSD}boolean>', ("1", XSD + "boolean")),  # not a valid lexical form
    (f'"x"^^<{XSD}string>', ("x", XSD + "string")),
    ('"plain"', ("plain", None)),
    ('"hello"@en-GB', ("hello", "@en-gb")),  # language tags come back lower case
    ('"3"^^<urn:x-custom>', ("3", "urn:x-custom")),
    ('"emoji \\U0001F600 \\u00e9t\\u00e9"', ("emoji \U0001F600 été", None)),
    ('"tab\\tnl\\nquote\\"bs\\\\"', ('tab\tnl\nquote"bs\\', None)),
    ('"' + "L" * 100_000 + '"', ("L" * 100_000, None)),
]


def _term(o: dict[str, str]) -> tuple[str, str | None]:
    if "xml:lang" in o:
        return o["value"], "@" + o["xml:lang"]
    return o["value"], o.get("datatype")


def test_literals_round_trip_by_value_not_always_by_lexical_form(c: Client, g: str) -> None:
    data = " ".join(f"<urn:s{i}> <urn:v> {lit} ." for i, (lit, _) in enumerate(ROUND_TRIP))
    assert c.update(f"INSERT DATA {{ GRAPH <{g}> {{ {data} }} }}").status_code == 200
    got = c.objects(g)
    for i, (written, expected) in enumerate(ROUND_TRIP):
        assert _term(got[f"urn:s{i}"]) == expected, written[:80]
    # JSON results say "typed-literal" (SPARQL 1.0's name) for a literal with a datatype
    assert got["urn:s5"]["type"] == "typed-literal" and got["urn:s11"]["type"] == "literal"
    # integers are 64-bit: 2**63 wraps round *silently* to -2**63; from 2**64 on refused
    wrapped = c.update(f'INSERT DATA {{ GRAPH <{g}-big> {{ <urn:big> <urn:v> '
                       f'"9223372036854775808"^^<{XSD}integer> }} }}')
    assert wrapped.status_code == 200
    assert c.objects(g + "-big")["urn:big"]["value"] == "-9223372036854775808"
    big = c.update(f'INSERT DATA {{ GRAPH <{g}> {{ <urn:big> <urn:v> '
                   f'"18446744073709551616"^^<{XSD}integer> }} }}')
    assert big.status_code == 400 and "SR341" in big.text
    # values match by value: DELETE DATA with the written forms removes every one
    assert c.update(f"DELETE DATA {{ GRAPH <{g}> {{ {data} }} }}").status_code == 200
    assert c.count(g) == 0


def test_datetimes_compare_by_value(c: Client, g: str) -> None:
    stamp = f'"2026-12-01T10:00:00.123456+00:00"^^<{XSD}dateTime>'
    assert c.update(f"INSERT DATA {{ GRAPH <{g}> {{ <urn:s> <urn:at> {stamp} }} }}"
                    ).status_code == 200
    assert c.select(f'SELECT ?o WHERE {{ GRAPH <{g}> {{ ?s ?p ?o FILTER (?o = '
                    f'"2026-12-01T12:00:00.123456+02:00"^^<{XSD}dateTime>) }} }}')
    assert not c.select(f'SELECT ?o WHERE {{ GRAPH <{g}> {{ ?s ?p ?o FILTER (?o > '
                        f'"2026-12-01T10:00:01Z"^^<{XSD}dateTime>) }} }}')


def test_blank_nodes_are_refused_in_insert_data_but_not_in_insert_where(c: Client,
                                                                        g: str) -> None:
    """SPARQL 1.1 allows blank nodes in ``INSERT DATA``; Virtuoso 7.2 refuses them
    (SP031). ``INSERT { … } WHERE {}`` and the graph store accept them; each request's
    labels are fresh nodes; results name them ``nodeID://…``."""
    refused = c.update(f'INSERT DATA {{ GRAPH <{g}> {{ _:x <urn:p> "1" }} }}')
    assert refused.status_code == 400 and "SP031" in refused.text
    for value in ("1", "2"):
        assert c.update(f'INSERT {{ GRAPH <{g}> {{ _:x <urn:p> "{value}" . _:x <urn:q> '
                        f'"{value}" }} }} WHERE {{}}').status_code == 200
    rows = c.select(f"SELECT ?s ?o WHERE {{ GRAPH <{g}> {{ ?s <urn:p> ?o }} }}")
    assert len({r["s"]["value"] for r in rows}) == 2
    assert all(r["s"]["type"] == "bnode" and r["s"]["value"].startswith("nodeID://")
               for r in rows)
    # a blank node is reached by its pattern, not its label
    assert c.update(f'DELETE WHERE {{ GRAPH <{g}> {{ ?s <urn:p> "1" . ?s ?p ?o }} }}'
                    ).status_code == 200
    assert c.count(g) == 2


# -- queries and results ---------------------------------------------------------------


def test_the_default_graph_is_the_union_of_all_graphs(c: Client, g: str) -> None:
    assert c.update(f"INSERT DATA {{ GRAPH <{g}> {{ <{g}#only> <urn:p> 1 }} }}"
                    ).status_code == 200
    assert c.select(f"SELECT ?o WHERE {{ <{g}#only> <urn:p> ?o }}")
    graphs = {r["g"]["value"] for r in c.select(
        "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")}
    # Virtuoso's own graphs are in every dataset: a count or an export filters them out
    assert g in graphs and "http://www.openlinksw.com/schemas/virtrdf#" in graphs
    answer = c.http.get(c.e.graph_store, params={"default": ""})
    assert answer.status_code == 500 and "not configured to have default graph" in answer.text


def test_result_formats(c: Client, g: str) -> None:
    assert c.update(f'INSERT DATA {{ GRAPH <{g}> {{ <urn:a> <urn:p> "x"@fr }} }}'
                    ).status_code == 200
    ask = c.http.post(c.e.query, headers={"Accept": JSON},
                      data={"query": f"ASK {{ GRAPH <{g}> {{ <urn:a> ?p ?o }} }}"})
    assert ask.headers["content-type"].startswith(JSON) and ask.json()["boolean"] is True
    construct = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{g}> {{ ?s ?p ?o }} }}"
    nt = c.http.post(c.e.query, data={"query": construct},
                     headers={"Accept": "application/n-triples"})
    assert nt.status_code == 200 and nt.text.strip() == '<urn:a>\t<urn:p>\t"x"@fr .'
    # no N-Quads: a dataset is read graph by graph (or as SELECT ?g ?s ?p ?o)
    nq = c.http.post(c.e.query, data={"query": construct},
                     headers={"Accept": "application/n-quads"})
    assert nq.status_code == 406
    # the protocol's "query via POST directly" (application/sparql-query) never answers;
    # a form-encoded POST (query=…) does, and a direct POST of an update does too
    with pytest.raises(httpx.ReadTimeout):
        c.http.post(c.e.query, content=b"ASK {}", timeout=3,
                    headers={"Content-Type": "application/sparql-query", "Accept": JSON})
    direct = c.http.post(c.e.update, headers={"Content-Type": "application/sparql-update"},
                         content=f"CLEAR SILENT GRAPH <{g}-other>".encode())
    assert direct.status_code == 200


# -- the Graph Store Protocol ----------------------------------------------------------


def test_the_graph_store_protocol(c: Client, g: str) -> None:
    """``/sparql-graph-crud-auth`` takes the standard ``graph`` parameter (and Virtuoso's
    older ``graph-uri``); PUT answers 201 for a new graph and 200 for an existing one;
    POST appends; DELETE removes (404 the second time); a graph that was never written
    is 404; blank nodes are accepted."""
    nt = b'_:a <urn:p> "gsp" .\n<urn:s> <urn:p> "\\u00e9t\\u00e9" .\n'
    assert c.gsp("PUT", {"graph": g}, nt).status_code == 201
    assert c.gsp("PUT", {"graph": g}, nt).status_code == 200
    assert c.count(g) == 2  # replaced, not appended
    assert c.gsp("POST", {"graph": g}, nt).status_code == 200
    assert c.count(g) == 3  # the blank node is a new one, the IRI triple the same
    for param in ("graph", "graph-uri"):
        got = c.gsp("GET", {param: g})
        # N-Triples out is ASCII: anything else is a \\u escape (valid, parsers read it)
        assert got.status_code == 200 and '<urn:s>\t<urn:p>\t"\\u00E9t\\u00E9" .' in got.text
        parsed = rdflib.Graph().parse(data=got.text, format="nt")
        assert (rdflib.URIRef("urn:s"), rdflib.URIRef("urn:p"), rdflib.Literal("été")) in parsed
    turtle = b'@prefix e: <urn:> . e:t e:p "t"@de .\n'
    assert c.gsp("POST", {"graph": g}, turtle, "text/turtle").status_code == 200
    assert c.count(g) == 4
    assert c.gsp("PUT", {"graph": g + "-bad"}, b"<urn:a> <urn:p> ").status_code >= 400
    # a DELETE that asks for an RDF type in reply answers 406 *and deletes the graph*
    refused = c.http.delete(c.e.graph_store, params={"graph": g},
                            headers={"Accept": "application/n-triples"})
    assert refused.status_code == 406 and c.count(g) == 0
    assert c.gsp("DELETE", {"graph": g}).status_code == 404
    assert c.gsp("PUT", {"graph": g}, nt).status_code == 201
    assert c.gsp("DELETE", {"graph": g}).status_code == 200
    assert c.gsp("DELETE", {"graph": g}).status_code == 404
    assert c.gsp("GET", {"graph": g}).status_code == 404


def test_clear_drops_every_graph_but_virtuosos_own(virtuoso: ScratchVirtuoso, c: Client,
                                                   g: str) -> None:
    assert "http://www.openlinksw.com/schemas/virtrdf#" in virtuoso.system_graphs
    assert c.update(f"INSERT DATA {{ GRAPH <{g}> {{ <urn:a> <urn:p> 1 }} }}").status_code == 200
    assert g in virtuoso.graph_names()
    virtuoso.clear()
    assert set(virtuoso.graph_names()) == set(virtuoso.system_graphs)
    assert c.count(g) == 0


# -- what the remote store does about it ---------------------------------------------


def test_now_is_the_clients_and_has_a_time_zone() -> None:
    from cradle_kg.storage.sparql_values import with_now

    now = '"2026-12-01T19:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>'
    text = ('SELECT ?x WHERE { ?x <urn:p> "NOW()" . # NOW()\n'
            "BIND(COALESCE(?at, now ( )) AS ?asOf) FILTER (?d <= NOW()) ?x <urn:NOW> ex:NOW() }")
    assert with_now(text, now) == (
        'SELECT ?x WHERE { ?x <urn:p> "NOW()" . # NOW()\n'
        f"BIND(COALESCE(?at, {now}) AS ?asOf) FILTER (?d <= {now}) ?x <urn:NOW> ex:NOW() }}")


def test_virtuosos_now_compares_wrongly_with_time_zoned_values(c: Client) -> None:
    """Why the remote store sends its own NOW(): Virtuoso's has no time zone, and an
    instant an hour ahead compares as ``<=`` it."""
    from datetime import UTC, datetime, timedelta

    hour = (datetime.now(UTC) + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    ahead = f'"{hour}"^^<{XSD}dateTime>'
    rows = c.select(f"SELECT (TZ(NOW()) AS ?tz) ({ahead} <= NOW() AS ?le) {{}}")
    assert rows[0]["tz"]["value"] == "" and rows[0]["le"]["value"] == "1"
    # and a boolean comes back as an integer
    assert rows[0]["le"]["datatype"] == XSD + "integer"


def test_results_are_read_in_the_standard_form(virtuoso: ScratchVirtuoso, c: Client,
                                               g: str) -> None:
    import pyoxigraph as ox

    from cradle_kg.storage.graph_config import GraphEndpoints, resolve
    from cradle_kg.storage.sparql_http import SparqlHttpStore

    assert c.update(f'INSERT DATA {{ GRAPH <{g}> {{ <urn:s> <urn:b> "true"^^<{XSD}boolean> ; '
                    f'<urn:t> "2026-12-01T10:00:00.500+00:00"^^<{XSD}dateTime> }} }}'
                    ).status_code == 200
    assert c.update(f'INSERT {{ GRAPH <{g}> {{ <urn:s> <urn:n> _:x }} }} WHERE {{}}'
                    ).status_code == 200
    e = virtuoso.endpoints
    store = SparqlHttpStore(resolve(GraphEndpoints(query=e.query, update=e.update,
                                                   store=e.graph_store)))
    store.client.auth = httpx.BasicAuth(e.user, e.password)
    try:
        found = store.query(f"SELECT ?b ?t ?n WHERE {{ GRAPH <{g}> {{ <urn:s> <urn:b> ?b ; "
                            f"<urn:t> ?t ; <urn:n> ?n }} }}", union=False)
        assert isinstance(found, ox.QuerySolutions)
        row = next(iter(found))
        assert row["b"] == ox.Literal("true", datatype=ox.NamedNode(XSD + "boolean"))
        assert row["t"] == ox.Literal("2026-12-01T10:00:00.5Z",
                                      datatype=ox.NamedNode(XSD + "dateTime"))
        assert isinstance(row["n"], ox.BlankNode)
        built = store.query(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{g}> {{ ?s <urn:b> ?o "
                            "BIND(<urn:b> AS ?p) } }", union=False)
        assert isinstance(built, ox.QueryTriples) and len(list(built)) == 1
    finally:
        store.close()


def test_query_evaluation_quirks(c: Client, g: str) -> None:
    """A trailing VALUES of a variable the group does not mention gives no rows (inside
    the group: one); a CONSTRUCT may be answered as SPARQL JSON; 1/0 fails the query."""
    assert c.update(f"INSERT DATA {{ GRAPH <{g}> {{ <urn:t> <urn:p> <urn:o> }} }}"
                    ).status_code == 200
    pattern = f"GRAPH <{g}> {{ ?s <urn:p> <urn:o> }}"
    assert c.select(f'SELECT ?s ?o WHERE {{ {pattern} }} VALUES (?o) {{ ("a") }}') == []
    inside = c.select(f'SELECT ?s ?o WHERE {{ VALUES (?o) {{ ("a") }} {pattern} }}')
    assert [(r["s"]["value"], r["o"]["value"]) for r in inside] == [("urn:t", "a")]
    built = c.http.post(c.e.query, data={"query": f"CONSTRUCT {{ ?s <urn:q> 1 }} WHERE "
                                                  f"{{ {pattern} }}"},
                        headers={"Accept": f"{JSON}, application/n-triples;q=0.9"})
    assert built.headers["content-type"].startswith(JSON)
    zero = c.http.post(c.e.query, data={"query": "SELECT (1/0 AS ?x) {}"},
                       headers={"Accept": JSON})
    assert zero.status_code == 500 and "Division by 0" in zero.text
