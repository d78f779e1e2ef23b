"""``sparql_guard.pattern_count``: the triple patterns a query joins, counted high, never low.

Each case is a query and the number of triple patterns its groups join (as the engine
expands them: a path step, a collection item twice); the count is at least that, and
what is data (``VALUES`` rows) or an expression (``IN`` lists, ``||`` chains) is not
counted as patterns.
"""

from __future__ import annotations

import pytest

from cradle_kg.errors import QueryError
from cradle_kg.graph.sparql_guard import check_size, pattern_count

P = "<https://e.example/p>"

#: a query, and the triple patterns its groups join at least
JOINED = [
    (f"SELECT * WHERE {{ ?s {P} ?o }}", 1),
    (f"SELECT * WHERE {{ ?s {P} ?o . ?o {P} ?x . }}", 2),
    (f"SELECT * WHERE {{ ?s {P} ?a, ?b, ?c ; {P} ?d }}", 4),
    (f"SELECT * WHERE {{ ?s {P}/{P}/^{P} ?o }}", 3),
    (f"SELECT * WHERE {{ ?s {P} ?o FILTER(?o > 1) ?o {P} ?x BIND(1 AS ?y) ?x {P} ?z }}", 3),
    (f"SELECT * WHERE {{ ?s {P} [ {P} ?a ; {P} [ {P} ?b ] ] }}", 4),
    (f"SELECT * WHERE {{ ?s {P} (?a ?b ?c) }}", 7),
    (f"SELECT * WHERE {{ ?s {P} (?a?b?c) }}", 7),
    (f"SELECT * WHERE {{ {{ ?a {P} ?b }} {{ ?b {P} ?c }} OPTIONAL {{ ?c {P} ?d }} }}", 3),
    (f"SELECT * WHERE {{ ?s {P} ?o MINUS {{ ?o {P} ?x }} ?x {P} ?y }}", 3),
    (f"SELECT * WHERE {{ GRAPH ?g {{ ?s {P} ?o . ?o {P} ?x }} }}", 2),
    (f"SELECT * WHERE {{ ?s {P} ?o FILTER EXISTS {{ ?o {P} ?x . ?x {P} ?y }} }}", 3),
]


@pytest.mark.parametrize(("query", "joined"), JOINED)
def test_the_count_is_never_below_the_patterns_joined(query: str, joined: int) -> None:
    assert pattern_count(query) >= joined


@pytest.mark.parametrize("query", [
    f"SELECT * WHERE {{ ?s {P} ?o }} VALUES (?s ?o) {{ "
    + " ".join(f"(<https://e.example/{i}> {i})" for i in range(500)) + " }",
    f"SELECT * WHERE {{ ?s {P} ?o VALUES ?o {{ " + " ".join(map(str, range(500))) + " }} }}",
    f"SELECT * WHERE {{ ?s {P} ?o FILTER(?o IN (" + ", ".join(map(str, range(500))) + ")) }",
    f"SELECT * WHERE {{ ?s {P} ?o FILTER(" + " || ".join(f"?o = {i}" for i in range(500))
    + ") }",
    f"SELECT (COUNT(*) AS ?n) (GROUP_CONCAT(?o; separator=\", \") AS ?all) WHERE {{ ?s {P} ?o }}",
    f"SELECT * WHERE {{ ?s {P} ?o . FILTER(CONTAINS(STR(?o), \". ; , / [ ( {{\")) }} # . ; ,",
])
def test_data_expressions_strings_and_comments_are_not_patterns(query: str) -> None:
    assert pattern_count(query) <= 8  # a few, whatever the size of the data


def test_a_group_counts_once_whether_or_not_it_holds_a_triple() -> None:
    # a group holding nothing counted is joined all the same (tests/security/test_353)
    assert pattern_count("SELECT * WHERE { " + " UNION ".join(
        f"{{ BIND({i} AS ?x) }}" for i in range(200)) + " }") >= 200
    # ... and one holding a triple is counted by it, not twice: 99 OPTIONALs stay under
    assert pattern_count(f"SELECT * WHERE {{ ?s {P} ?o " + " ".join(
        f"OPTIONAL {{ ?s {P} ?o{i} }}" for i in range(98)) + " }") == 99


def test_check_size_refuses_past_the_cap_and_says_how_many() -> None:
    long_path = f"SELECT * WHERE {{ ?s {'/'.join([P] * 101)} ?o }}"
    check_size(long_path)  # not capped unless asked (a named query, a graph policy)
    with pytest.raises(QueryError, match="joins 101 triple patterns or path steps, over the "
                                         "cap of 100"):
        check_size(long_path, max_patterns=100)
    check_size(long_path, max_patterns=101)
