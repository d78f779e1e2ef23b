"""A long join cannot hide from the pattern cap behind a word read as ``VALUES`` or a sign.

Finding (twenty-first round's review of test_343): ``sparql_guard.pattern_count`` took any
word ``values`` for the keyword, and counted nothing in the next ``{ … }`` (a ``VALUES``
block's rows are data). A language tag (``"x"@values``) or a prefixed name whose local
part is escaped or holds a character its words do not (``e:a\\-values``, ``e:a·values``)
spelled that word where the engine reads none: the group after it — 400 triples of one
subject — counted nothing and held a query worker to the timeout (503, the worker
replaced), as before the cap. So did a collection of signed numbers (``(+0 +1 …)``,
``(0e+1 …)``, ``(.5 …)``): the ``+`` or the ``.`` read as an operator or a separator made
the ``( … )`` an expression, not a collection.

Now ``VALUES`` is the keyword only where a keyword can stand (at the start, after
white space or a bracket; never after an escape), a name's dots are part of it, and a
number's sign or leading dot is part of the number: each of these queries is a 400
saying the cap, its worker never replaced; a ``VALUES`` block after ``}`` and numbers in
a filter are answered as before.
"""

from __future__ import annotations

import pytest

from cradle_kg.graph.sparql_guard import MAX_QUERY_PATTERNS, pattern_count

from ..server.conftest import Server
from .caps_server import OVER_PATTERN_CAP, ask, assert_refused_at_once, served_demo

E = "PREFIX e: <https://e.example/> "
#: 400 triples of one subject: 209 s to plan on an empty store
GROUP = "{ ?a " + " ; ".join(f"<https://e.example/p{i}> ?b{i}" for i in range(400)) + " }"
HIDDEN = {
    "a language tag @values": f'SELECT * WHERE {{ ?x ?y "v"@values . {GROUP} }}',
    "an escaped name e:a\\-values": E + f"SELECT * WHERE {{ ?x e:a\\-values ?y . {GROUP} }}",
    "a name e:a·values": E + f"SELECT * WHERE {{ ?x e:a·values ?y . {GROUP} }}",
    "a name e:a..values": E + f"SELECT * WHERE {{ ?x e:a..values ?y . {GROUP} }}",
    "400 triples glued to a variable's dot": E + "SELECT * WHERE { ?a e:p0 ?b0" + "".join(
        f".e:s e:p{i} ?b{i}" for i in range(1, 400)) + " }",
    "400 triples glued to a number's dot": E + "SELECT * WHERE { ?a e:p0 0" + "".join(
        f".e:s e:p{i} {i}" for i in range(1, 400)) + " }",
    "a collection of 600 signed numbers": "SELECT * WHERE { ?s e:p ("
    + " ".join(f"+{i}" for i in range(600)) + ") }",
    "a collection of 600 exponents": "SELECT * WHERE { ?s e:p ("
    + " ".join(f"{i}e+1" for i in range(600)) + ") }",
    "a collection of 600 decimals": "SELECT * WHERE { ?s e:p ("
    + " ".join(f".{i}" for i in range(600)) + ") }",
    # no triple at all: each group, each BIND a node of the plan the engine joins
    "a union of 3,000 groups binding a value": "SELECT * WHERE { " + " UNION ".join(
        f"{{ BIND({i} AS ?x) }}" for i in range(3000)) + " }",
    "4,000 groups each binding a value": "SELECT * WHERE { " + " ".join(
        f"{{ BIND({i} AS ?x{i}) }}" for i in range(4000)) + " }",
}
for _name in ("a collection of 600 signed numbers", "a collection of 600 exponents",
              "a collection of 600 decimals"):
    HIDDEN[_name] = E + HIDDEN[_name]
#: answered as before: a real VALUES block (after a bracket, after white space), numbers
ORDINARY = [
    E + "SELECT * WHERE { ?s e:p ?o }VALUES ?o { " + " ".join(
        f"{i}" for i in range(2000)) + " }",
    E + "SELECT * WHERE { ?s e:p ?o VALUES (?o ?s) { " + " ".join(
        f"(+{i} e:x{i})" for i in range(500)) + " } }",
    E + "SELECT * WHERE { ?s e:p ?o FILTER(?o IN (" + ", ".join(
        f"+{i}" for i in range(500)) + ")) }",
]


server = served_demo("t353")


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_a_join_hidden_behind_a_word_or_a_sign_is_a_400(server: Server, name: str) -> None:
    assert_refused_at_once(server, HIDDEN[name], OVER_PATTERN_CAP)
    assert pattern_count(HIDDEN[name]) > MAX_QUERY_PATTERNS  # before: 1 or 2


@pytest.mark.parametrize("query", ORDINARY)
def test_values_blocks_and_signed_numbers_are_answered(server: Server, query: str) -> None:
    assert pattern_count(query) <= 8
    status, text = ask(server, query)
    assert status == 200, (status, text[:300])
