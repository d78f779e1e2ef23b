"""The GraphStore contract, on both backends: the embedded on-disk Oxigraph store and a
real ``oxigraph serve`` over SPARQL 1.1 Query / Update / the Graph Store HTTP Protocol.

Each test opens the store the home's configuration names (``graph_backend`` sets
``CRADLE_GRAPH_URL`` or clears it), so the same assertions hold both implementations to
one behaviour. The remote store's typed errors are tested against real HTTP servers on
127.0.0.1 that refuse, stall or answer garbage.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg.errors import (
    GraphAuthError,
    GraphCredentialsInClearError,
    GraphResponseError,
    GraphStoreError,
    GraphTimeoutError,
    GraphUnreachableError,
    InputError,
    QueryError,
)
from cradle_kg.graph.catchup import catch_up, rebuild
from cradle_kg.graph.queries import execute
from cradle_kg.storage import open_home_journal
from cradle_kg.storage.graph import META_GRAPH, PROJECTION_VERSION, GraphStore, QuadBatch
from cradle_kg.storage.graph_config import GraphEndpoints, parse_setting, resolve
from cradle_kg.storage.graph_opening import open_graph_store
from cradle_kg.storage.oxigraph import OxigraphStore
from cradle_kg.storage.sparql_http import SparqlHttpStore
from cradle_kg.storage.sparql_scratch import ScratchOxigraph
from cradle_kg.storage.sparql_values import with_values
from tests import demo_template

RUN_A = "https://w3id.org/cradle/run/a"
RUN_B = "https://w3id.org/cradle/run/b"
P = "http://example.org/p"
K = "https://w3id.org/cradle/pack/x/1/k"


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("contract") / "home"
    demo_template.demo_home(home, tmp_path_factory)
    return home


@pytest.fixture
def store(graph_backend: str, tmp_path: Path) -> Iterator[GraphStore]:
    opened = open_graph_store(tmp_path)
    assert isinstance(opened, OxigraphStore if graph_backend == "embedded" else SparqlHttpStore)
    try:
        yield opened
    finally:
        opened.close()


Change = tuple[str, str, tuple[str, ...]]


def insert(graph: str, *triples: str) -> Change:
    return ("add", f"<{graph}>", triples)


def delete(graph: str, *triples: str) -> Change:
    return ("remove", f"<{graph}>", triples)


def batch(*changes: Change) -> QuadBatch:
    """A batch of changes in order (as the catch-up loop makes one from events)."""
    out = QuadBatch()
    for verb, graph, triples in changes:
        getattr(out, verb)(graph, triples)
    return out


def test_an_empty_store_has_no_watermark_and_no_graphs(store: GraphStore) -> None:
    assert store.projected_seq() == 0
    assert store.run_graphs() == [] and store.data_graphs() == []
    assert store.nquads() == ""


def test_a_batch_and_its_watermark_land_together(store: GraphStore) -> None:
    store.apply(batch(insert(RUN_A, f'<urn:s> <{P}> "one"'),
                      insert(RUN_B, f"<urn:s> <{P}> <urn:o>")), 12)
    assert store.projected_seq() == 12
    assert store.layout() == PROJECTION_VERSION
    assert store.run_graphs() == [RUN_A, RUN_B]
    assert META_GRAPH in store.graph_names()
    # replaying the batch changes nothing but the watermark (set operations)
    before = store.nquads()
    store.apply(batch(insert(RUN_A, f'<urn:s> <{P}> "one"')), 12)
    assert store.nquads() == before
    store.apply(batch(delete(RUN_A, f'<urn:s> <{P}> "one"')), 13)
    assert store.projected_seq() == 13
    assert store.nquads(graphs=[RUN_A]) == ""  # (an emptied graph may stay named)


def test_a_batch_is_its_net_effect_in_order(store: GraphStore) -> None:
    """A triple added then retracted in one batch is not there; retracted then added, it
    is (an approval's ``awaitsUse`` flag set and cleared by events of one batch)."""
    store.apply(batch(insert(RUN_A, f"<urn:kept> <{P}> <urn:o>")), 1)
    store.apply(batch(insert(RUN_A, f"<urn:gone> <{P}> <urn:o>"),
                      delete(RUN_A, f"<urn:gone> <{P}> <urn:o>", f"<urn:kept> <{P}> <urn:o>"),
                      insert(RUN_A, f"<urn:kept> <{P}> <urn:o>", f"<urn:new> <{P}> <urn:o>"),
                      delete(RUN_B, f"<urn:never> <{P}> <urn:o>")), 2)
    assert store.projected_seq() == 2
    assert store.nquads() == (f"<urn:kept> <{P}> <urn:o> <{RUN_A}> .\n"
                              f"<urn:new> <{P}> <urn:o> <{RUN_A}> .\n")


def test_a_failed_batch_leaves_content_and_watermark_as_they_were(store: GraphStore) -> None:
    store.apply(batch(insert(RUN_A, f"<urn:s> <{P}> <urn:o>")), 3)
    before = store.nquads()
    with pytest.raises(GraphStoreError, match="not N-Quads"):
        store.apply(batch(insert(RUN_B, f"<urn:s> <{P}> <urn:o>"), insert(RUN_B, "nonsense")),
                    4)
    assert store.projected_seq() == 3
    assert store.nquads() == before


def test_bound_parameters_are_values_not_text(store: GraphStore) -> None:
    nasty = 'x" } ; DROP ALL ; { "'
    store.apply(batch(insert(RUN_A, f'<urn:s> <{P}> "{nasty.replace(chr(34), chr(92) + chr(34))}"',
                        f"<urn:t> <{P}> <urn:o>")), 1)
    found = execute(store, f"SELECT ?s ?o WHERE {{ ?s <{P}> ?o }}",
                    bound={"o": ox.Literal(nasty)})
    assert isinstance(found, ox.QuerySolutions)
    assert [(r["s"], r["o"]) for r in found] == [(ox.NamedNode("urn:s"), ox.Literal(nasty))]
    assert len(store.run_graphs()) == 1  # nothing was dropped
    with pytest.raises(QueryError):  # a bound variable must be projected, on both backends
        execute(store, f"SELECT ?s WHERE {{ ?s <{P}> ?o }}", bound={"o": ox.Literal("x")})


def test_union_default_graph_datasets_ask_and_construct(store: GraphStore) -> None:
    store.apply(batch(insert(RUN_A, f"<urn:a> <{P}> <urn:o>"),
                      insert(RUN_B, f"<urn:b> <{P}> <urn:o>")), 2)
    q = f"SELECT ?s WHERE {{ ?s <{P}> <urn:o> }} ORDER BY ?s"
    union = execute(store, q)
    assert isinstance(union, ox.QuerySolutions)
    assert [r["s"].value for r in union] == ["urn:a", "urn:b"]
    only_a = execute(store, q, default_graph=[RUN_A])
    assert isinstance(only_a, ox.QuerySolutions)
    assert [r["s"].value for r in only_a] == ["urn:a"]
    named = execute(store, "SELECT ?g WHERE { GRAPH ?g { <urn:b> ?p ?o } }",
                    named_graphs=[RUN_B])
    assert isinstance(named, ox.QuerySolutions)
    assert [r["g"].value for r in named] == [RUN_B]
    asked = execute(store, f"ASK {{ <urn:a> <{P}> ?o }}")
    assert isinstance(asked, ox.QueryBoolean) and bool(asked)
    built = execute(store, f"CONSTRUCT {{ ?s <urn:seen> true }} WHERE {{ ?s <{P}> ?o }}")
    assert isinstance(built, ox.QueryTriples)
    assert sorted(str(t.subject) for t in built) == ["<urn:a>", "<urn:b>"]
    assert store.ask(f"ASK {{ GRAPH <{RUN_A}> {{ ?s ?p ?o }} }}")
    tsv = store.tsv(f"SELECT ?s WHERE {{ GRAPH ?g {{ ?s <{P}> ?o }} }} ORDER BY ?s")
    assert tsv.splitlines() == [b"?s", b"<urn:a>", b"<urn:b>"]


def test_knowledge_graphs_install_once_and_survive_a_rebuild(store: GraphStore,
                                                             demo_home: Path) -> None:
    store.install_knowledge(K, "sha256:1", "@prefix a: <http://a#> .\na:x a:y a:z .",
                            turtle=True)
    assert store.knowledge_graphs() == [K]
    assert store.knowledge_digest(K) == "sha256:1"
    assert store.data_graphs() == []  # knowledge is not projection
    store.install_knowledge(K, "sha256:2", "<http://a#x> <http://a#y> <http://a#w> .\n")
    assert store.knowledge_digest(K) == "sha256:2"
    assert "<http://a#z>" not in store.nquads(graphs=[K])  # replaced, not added to
    with open_home_journal(demo_home, must_exist=True) as journal:
        count = rebuild(store, journal)
        assert store.projected_seq() == journal.head()[0] and count == journal.head()[0]
    assert store.knowledge_graphs() == [K]
    with pytest.raises(Exception, match="not a knowledge graph name"):
        store.install_knowledge(RUN_A, "d", "")


def test_both_backends_project_the_demo_to_the_same_quads(graph_backend: str,
                                                          demo_home: Path,
                                                          tmp_path: Path) -> None:
    reference = OxigraphStore.in_memory()
    with open_home_journal(demo_home, must_exist=True) as journal:
        rebuild(reference, journal)
        store = open_graph_store(tmp_path)
        try:
            done = catch_up(store, journal, batch=7)  # many small batches
            assert done == journal.head()[0] == store.projected_seq()
            assert catch_up(store, journal) == 0  # at the head: nothing to do
            assert store.nquads() == reference.nquads()
            assert store.run_graphs() == reference.run_graphs()
        finally:
            store.close()


# --- configuration ---------------------------------------------------------------------


def test_the_setting_names_a_base_url_or_three_endpoints() -> None:
    base = parse_setting("http://h:7878/")
    assert (base.query, base.update, base.store) == ("http://h:7878/query", "http://h:7878/update",
                                                      "http://h:7878/store")
    explicit = parse_setting("query=http://h/sparql update=http://h/sparql "
                             "store=http://h/sparql-graph-crud")
    assert explicit.store == "http://h/sparql-graph-crud"
    with pytest.raises(InputError):
        parse_setting("ftp://h")
    with pytest.raises(InputError):
        parse_setting("query=http://h/q nonsense=http://h")
    creds = resolve(GraphEndpoints(query="https://u:pw@h/q", update="https://h/u",
                                   store="https://h/s"))
    assert creds.query == "https://h/q" and creds.basic == ("u", "pw")
    # in clear to a host that is not loopback: refused (tests/security/test_372)
    with pytest.raises(GraphCredentialsInClearError):
        resolve(GraphEndpoints(query="http://u:pw@h/q", update="http://h/u",
                               store="http://h/s"))


# --- the remote store's typed errors, from real servers on 127.0.0.1 --------------------


class _Handler(BaseHTTPRequestHandler):
    mode = "garbage"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.mode == "auth":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="x"')
            self.end_headers()
            return
        if self.mode == "slow":
            time.sleep(2)
        body = b"<html>not results</html>"
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the slow case: the client gave up already
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def fake_store(request: pytest.FixtureRequest) -> Iterator[SparqlHttpStore]:
    handler = type("H", (_Handler,), {"mode": request.param})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    remote = resolve(parse_setting(base)).model_copy(update={"timeout_s": 0.5})
    store = SparqlHttpStore(remote)
    try:
        yield store
    finally:
        store.close()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("fake_store", "error"), [
    ("auth", GraphAuthError), ("garbage", GraphResponseError), ("slow", GraphTimeoutError)],
    indirect=["fake_store"])
def test_remote_failures_are_typed_errors(fake_store: SparqlHttpStore,
                                          error: type[Exception]) -> None:
    with pytest.raises(error) as caught:
        fake_store.projected_seq()
    assert "Traceback" not in str(caught.value)


def test_an_unreachable_store_is_a_typed_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nobody listens there
    store = SparqlHttpStore(resolve(parse_setting(f"http://127.0.0.1:{port}")))
    with pytest.raises(GraphUnreachableError, match="cannot reach the graph store"):
        store.apply(QuadBatch(), 1)
    store.close()


def test_bound_variables_are_substituted_past_strings_comments_and_the_projection() -> None:
    text = ('PREFIX a: <http://x#> # ?s { not here\nSELECT ?s ?o WHERE { ?s a:p "?s{" . '
            "BIND(COALESCE(?s, 1) AS ?o) } ORDER BY ?s")
    got = with_values(text, {"s": "<urn:s>"})
    assert got == ('PREFIX a: <http://x#> # ?s { not here\nSELECT ?s ?o WHERE { VALUES (?s) '
                   '{ (<urn:s>) } <urn:s> a:p "?s{" . BIND(COALESCE(<urn:s>, 1) AS ?o) } '
                   "ORDER BY ?s")
    sub = with_values("SELECT ?s ?n WHERE { { SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o } "
                      "GROUP BY ?s } }", {"s": "<urn:s>"})
    assert sub.startswith("SELECT ?s ?n WHERE { VALUES (?s) { (<urn:s>) } { SELECT ?s "
                          "(COUNT(*) AS ?n) WHERE { <urn:s> ?p ?o } GROUP BY ?s } }")
    with pytest.raises(QueryError):
        with_values("SELECT * WHERE { ?s ?p ?o }", {"s o": "<urn:s>"})


def test_a_shared_remote_store_s_other_graphs_are_none_of_the_projection_s_business(
        fresh_oxigraph: ScratchOxigraph) -> None:
    """An organisation's store holds graphs of its own: they are not listed, exported,
    dropped by a rebuild, or part of the union default graph."""
    store = SparqlHttpStore(resolve(fresh_oxigraph.endpoints()))
    try:
        store.apply(batch(insert("http://example.org/theirs", f"<urn:x> <{P}> <urn:y>"),
                     insert(RUN_A, f"<urn:a> <{P}> <urn:y>")), 1)
        assert store.graph_names() == [META_GRAPH, RUN_A]
        assert store.data_graphs() == [RUN_A]
        found = execute(store, f"SELECT ?s WHERE {{ ?s <{P}> ?o }}")
        assert isinstance(found, ox.QuerySolutions)
        assert [r["s"].value for r in found] == ["urn:a"]
        store.replace_all([], [], lambda: 2)
        assert store.ask("ASK { GRAPH <http://example.org/theirs> { ?s ?p ?o } }")
    finally:
        store.close()


@pytest.mark.parametrize("argv", [
    ["query", "runs"], ["export", "--format", "nquads"], ["validate", "--all"],
    ["graph", "sync"], ["graph", "rebuild"], ["graph", "follow", "--once"]])
def test_every_command_says_an_unreachable_store_in_one_line(demo_home: Path,
                                                               argv: list[str]) -> None:
    from tests.inprocess import run_cli

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = run_cli(*argv, "--home", str(demo_home),
                   env={"CRADLE_GRAPH_URL": f"http://127.0.0.1:{port}"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot reach the graph store" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_read_only_embedded_store_closes_cleanly(tmp_path: Path) -> None:
    """A reader beside the writer (validate's workers, a bench) closes without a flush:
    pyoxigraph refuses to flush a read-only store, and that must not surface as a
    traceback."""
    writer = OxigraphStore(tmp_path / "graph")
    writer.apply(batch(insert(RUN_A, f"<urn:s> <{P}> <urn:o>")), 1)
    writer.close()  # (beside a live writer RocksDB may move files under a reader: the
    # endpoint reads checkpoints for that reason)
    reader = OxigraphStore(tmp_path / "graph", read_only=True)
    try:
        assert reader.projected_seq() == 1
    finally:
        reader.close()
    with pytest.raises(GraphStoreError):  # not a store at all: a typed error, no traceback
        OxigraphStore(tmp_path / "nothing-here", read_only=True)


def _meta_triples(store: GraphStore) -> list[tuple[str, str]]:
    # the watermark and the layout (the journal a store projects is a triple of its own,
    # written once: tests/security/test_80)
    rows = store.query(f"SELECT ?p ?o WHERE {{ GRAPH <{META_GRAPH}> {{ <{META_GRAPH}> ?p ?o "
                       "FILTER(isLiteral(?o) && ?p != <https://w3id.org/cradle#projectedJournal>)"
                       " } }")
    assert isinstance(rows, ox.QuerySolutions)
    return sorted((str(r["p"].value), str(r["o"].value)) for r in rows)


def test_the_watermark_is_one_triple_whatever_wrote_it_before(store: GraphStore,
                                                              demo_home: Path) -> None:
    """Each batch replaces the watermark and the layout (the embedded store deletes the
    triples it read as data, no pattern): after batches, a rebuild and batches again,
    the meta graph holds exactly one of each."""
    seq = "https://w3id.org/cradle#projectedSeq"
    version = "https://w3id.org/cradle#projectionVersion"
    for n in (5, 6, 9):
        store.apply(batch(insert(RUN_A, f'<urn:s> <{P}> "{n}"')), n)
    assert _meta_triples(store) == [(seq, "9"), (version, str(PROJECTION_VERSION))]
    with open_home_journal(demo_home) as journal:
        rebuild(store, journal)
        head = journal.head()[0]
    store.apply(batch(insert(RUN_A, f"<urn:after> <{P}> <urn:o>")), head + 1)
    assert _meta_triples(store) == [(seq, str(head + 1)), (version, str(PROJECTION_VERSION))]
    assert store.projected_seq() == head + 1


def test_an_older_layout_s_watermark_is_replaced_by_the_next_batch(tmp_path: Path) -> None:
    """A store whose meta graph was written by an older cradle-kg (layout 2, with the
    pattern update): the next batch leaves only the new watermark and layout."""
    store = OxigraphStore(tmp_path / "graph")
    try:
        meta, integer = f"<{META_GRAPH}>", "<http://www.w3.org/2001/XMLSchema#integer>"
        store.store.update(
            f"INSERT DATA {{ GRAPH {meta} {{ {meta} <https://w3id.org/cradle#projectedSeq> "
            f'"40"^^{integer} . {meta} <https://w3id.org/cradle#projectionVersion> '
            f'"2"^^{integer} }} }}')
        assert (store.projected_seq(), store.layout()) == (40, 2)
        store.apply(batch(insert(RUN_A, f"<urn:s> <{P}> <urn:o>")), 41)
        assert (store.projected_seq(), store.layout()) == (41, PROJECTION_VERSION)
        assert len(_meta_triples(store)) == 2
    finally:
        store.close()
