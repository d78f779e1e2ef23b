"""A query that joins more triple patterns than the engine plans in time is a 400 at once.

Finding (twentieth review, left then): the open ``/sparql`` took any query within the size
(100 KB) and nesting (128) caps, and oxigraph plans a group's joins — a sequence path is
one triple pattern a step — in a time that grows as the third to fourth power of their
number, before it reads a row (measured on an empty store: 400 path steps 2.5 s, 200
triples that share a subject 11 s, 400 of them 209 s; a collection of 200 items, 1 KB,
3.4 s). A sequence path of 1,000 steps (13 KB) held a query worker for the whole timeout
(503) and had it replaced; a handful of them stalled the endpoint for everyone.

So did a ``FILTER`` chaining 4,000 comparisons with ``||`` (51 KB; 11.6 s to plan on an
empty store, where 12,000 ``true || true`` take 0.12 s).

Now every query is counted before it is parsed (``sparql_guard.pattern_count``: each
triples block, separator, blank node, path step and collection item, counted high): past
``--max-query-patterns`` (100; the named queries here count at most 27) it is a 400
``query_error`` saying so, its worker free at once and never replaced; and it is held to
the named queries' operator cap (``--max-query-operators``, 1,000). The timeout is
unchanged.
"""

from __future__ import annotations

import glob
from pathlib import Path

import pytest

from cradle_kg.graph.queries import QUERIES_DIR
from cradle_kg.graph.sparql_guard import MAX_QUERY_PATTERNS, pattern_count

from ..server.conftest import Server
from .caps_server import OVER_PATTERN_CAP, ask, assert_refused_at_once, served_demo

P = "<https://w3id.org/cradle#p>"
#: each a query the engine planned for longer than the test server's timeout (3 s)
LONG = {
    "a sequence path of 1,000 steps": f"SELECT * WHERE {{ ?s {'/'.join([P] * 1000)} ?o }}",
    "a path of 600 closures": f"ASK {{ ?s {'/'.join([P + '+'] * 600)} ?o }}",
    "400 triples of one subject": "SELECT * WHERE { ?a "
    + " ; ".join(f"<https://e.example/p{i}> ?b{i}" for i in range(400)) + " }",
    "400 triples split by filters": "SELECT * WHERE { "
    + " ".join(f"?a <https://e.example/p{i}> ?b{i} FILTER(?b{i} > 0)" for i in range(400))
    + " }",
    "a collection of 600 items": f"SELECT * WHERE {{ ?s {P} ("
    + " ".join(f"?b{i}" for i in range(600)) + ") }",
    "400 groups joined": "SELECT * WHERE { "
    + " ".join(f"{{ ?a {P} ?b{i} }}" for i in range(400)) + " }",
}
#: ... and one whose filter the engine rewrites for as long (4,000 comparisons: 11.6 s)
CHAINED = f"SELECT * WHERE {{ ?s {P} ?o FILTER(" + " || ".join(
    f"?o = {i}" for i in range(4000)) + ") }"
#: ordinary queries with paths, values and long filters: answered as before
ORDINARY = [
    "PREFIX cradle: <https://w3id.org/cradle#> SELECT * WHERE { ?s cradle:authorizedBy/"
    "cradle:verdict ?v . ?x (cradle:p|cradle:q)*/^cradle:r ?y } LIMIT 5",
    f"SELECT * WHERE {{ ?s {P} ?o }} VALUES ?o {{ "
    + " ".join(f"<https://e.example/o{i}>" for i in range(2000)) + " }",
    f"SELECT * WHERE {{ ?s {P} ?o FILTER(?o IN ("
    + ", ".join(str(i) for i in range(2000)) + ")) }",
    f"SELECT * WHERE {{ ?s {P} ?o FILTER(" + " || ".join(f"?o = {i}" for i in range(200))
    + ") }",
]
NAMED = sorted(glob.glob(str(QUERIES_DIR / "*.rq"))
               + glob.glob(str(Path(__file__).parents[2] / "packs" / "*" / "queries" / "*.rq")))


server = served_demo("t343")


@pytest.mark.parametrize("name", sorted(LONG))
def test_a_query_joining_too_many_patterns_is_a_400(server: Server, name: str) -> None:
    assert_refused_at_once(server, LONG[name], OVER_PATTERN_CAP)


def test_a_filter_chaining_too_many_operators_is_a_400(server: Server) -> None:
    assert_refused_at_once(server, CHAINED, "more than 1000 operators")


@pytest.mark.parametrize("query", ORDINARY)
def test_ordinary_paths_values_and_filters_are_answered(server: Server, query: str) -> None:
    status, text = ask(server, query)
    assert status == 200, (status, text[:300])


@pytest.mark.parametrize("path", NAMED, ids=lambda p: Path(p).name)
def test_each_named_query_is_answered_well_under_the_cap(server: Server, path: str) -> None:
    text = Path(path).read_text(encoding="utf-8")
    assert pattern_count(text) <= MAX_QUERY_PATTERNS // 2
    status, answer = ask(server, text)
    assert status == 200, (status, answer[:300])
