"""Bound parameters for a store reached over HTTP, in plain SPARQL 1.1.

A remote store has no substitution API, so the query is rewritten the way pyoxigraph's
``substitutions`` (RDF-dev SEP-0007) evaluates it: each bound variable is replaced by its
term wherever it occurs inside the query's groups (its patterns, FILTERs, BINDs,
sub-queries, a CONSTRUCT template), and a ``VALUES (?a ?b) { (<iri> "literal") }`` at
the head of the WHERE group keeps it a result column (the embedded store requires a bound
variable to be projected; the remote store checks the same on the results). The terms
are pyoxigraph's own N-Triples writing of checked RDF terms — a value holding quotes or
braces stays a value.

Variables are found with SPARQL's lexical rules as far as they need them (strings, IRIs,
comments and escapes hide them); the SELECT clause and solution modifiers (outside any
group) keep the variable, which the VALUES binds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from ..errors import QueryError

#: what hides brackets and variables in SPARQL's lexical rules (for :data:`re.VERBOSE`):
#: backslash escapes (``ex:a\'b`` is a name, not a string), comments (which end at CR or
#: LF), the four string forms and IRIs. Shared with :mod:`cradle_kg.graph.sparql_guard`.
SPARQL_HIDDEN: Final = r"""
    \\.
      |\#[^\r\n]*
      |'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
      |'(?:[^'\\\r\n]|\\.)*'|"(?:[^"\\\r\n]|\\.)*"
      |<[^<>"{}\x00-\x20]*>"""
_LEX: Final = re.compile(r"""
    (?P<skip>""" + SPARQL_HIDDEN + r""")
  | (?P<open>\{)
  | (?P<close>\})
  | (?P<var>[?$][A-Za-z0-9_]+)
  | (?P<word>[A-Za-z_]\w*)
  | [^\\\#'"<{}A-Za-z_?$]+
  | .
""", re.VERBOSE | re.DOTALL)
_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CALL: Final = re.compile(r"^\s*\(\s*\)")


def where_group(text: str) -> int:
    """The offset just after the ``{`` that opens the query's WHERE group."""
    depth = 0
    last_word = ""
    for m in _LEX.finditer(text):
        kind = m.lastgroup
        if kind == "open":
            if depth == 0 and last_word.upper() != "CONSTRUCT":
                return m.end()
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        elif kind == "word":
            last_word = m.group()
        elif kind != "skip" and m.group().strip():
            last_word = ""
    raise QueryError("the query has no WHERE group to bind parameters in")


_FORMS: Final = ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")


def query_form(text: str) -> str | None:
    """``SELECT``, ``ASK``, ``CONSTRUCT`` or ``DESCRIBE``: the query's form (its first
    keyword past the prologue), or None when there is none (the store will say why)."""
    for m in _LEX.finditer(text):
        if m.lastgroup == "word" and m.group().upper() in _FORMS:
            return m.group().upper()
        if m.lastgroup == "open":
            return None
    return None


def with_now(text: str, now: str) -> str:
    """``text`` with every ``NOW()`` call replaced by ``now`` (an N-Triples
    ``xsd:dateTime`` term, in UTC): SPARQL gives one NOW() per query, so the client's is as
    good; and a store's own may lack a time zone (Virtuoso 7.2's does, and then compares
    it wrongly with time-zoned values: an expiry an hour ahead is "<= NOW()")."""
    out: list[str] = []
    tokens = [(m.lastgroup, m.group()) for m in _LEX.finditer(text)]
    skip = False
    for i, (kind, token) in enumerate(tokens):
        if skip:
            skip = False
            continue
        call = _CALL.match(tokens[i + 1][1]) if i + 1 < len(tokens) else None
        if kind == "word" and token.upper() == "NOW" and call is not None \
                and not (out and out[-1].endswith(":")):  # `ex:NOW()` is not NOW()
            # the lexer keeps a run of punctuation in one token: "()) " after NOW
            out.append(now + tokens[i + 1][1][call.end():])
            skip = True
            continue
        out.append(token)
    return "".join(out)


def with_values(text: str, bound: Mapping[str, str]) -> str:
    """``text`` with ``bound`` (variable -> N-Triples term) substituted (module docstring)."""
    for name in bound:
        if not _NAME.match(name):
            raise QueryError(f"`{name}` is not a variable name")
    where_group(text)  # a query without a group has nothing to bind in
    out: list[str] = []
    depth = 0
    projection = False  # in a SELECT clause (a sub-query's keeps its variables)
    last_word = ""
    for m in _LEX.finditer(text):
        kind, token = m.lastgroup, m.group()
        if kind == "open":
            depth += 1
            projection = False
        elif kind == "close":
            depth = max(0, depth - 1)
            projection = False
        elif kind == "word":
            last_word = token.upper()
            # a SELECT clause, or a sub-query's GROUP BY / ORDER BY, keeps its variables
            projection = projection or last_word in ("SELECT", "BY")
        elif (kind == "var" and depth > 0 and token[1:] in bound and not projection
              and last_word != "AS"):
            token = bound[token[1:]]
        if kind == "var":
            last_word = ""
        out.append(token)
    names = sorted(bound)
    # at the head of the WHERE group, not after the query: Virtuoso 7.2 answers no rows
    # when a trailing VALUES binds a variable its WHERE group no longer mentions
    substituted = "".join(out)
    at = where_group(substituted)
    return (substituted[:at] + f" VALUES ({' '.join('?' + n for n in names)}) "
            f"{{ ({' '.join(bound[n] for n in names)}) }}" + substituted[at:])


__all__ = ["query_form", "where_group", "with_now", "with_values"]
