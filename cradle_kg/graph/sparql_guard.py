"""What a SPARQL query may do, decided on the parsed query — never by scanning its text.

Oxigraph executes ``SERVICE <url>`` by sending an HTTP request to the URL. A refusal
taken on the text (a regular expression looking for the word ``SERVICE``) was smuggled
past by a comment ended with a carriage return; any lexer that is not the engine's own
will differ from it somewhere. So:

* the query is **parsed** (rdflib's SPARQL 1.1 parser) and its **algebra** is walked:
  every ``SERVICE`` node, wherever it sits (sub-query, OPTIONAL, UNION, MINUS,
  FILTER EXISTS, ...), names its endpoint after prefixes and the base IRI are
  resolved. An endpoint that is a variable, or an IRI not on the allow-list, is
  refused. SPARQL Update (``LOAD`` included) is refused outright;
* a query that parser cannot read is refused too, **unless** the caller runs it where
  the engine cannot open a network connection at all (the server's query workers
  deny themselves sockets, see :mod:`cradle_kg.server.sandbox`): then the engine's own
  parser decides, and nothing it parses can reach the network;
* size and nesting are capped before any parser runs (a query nested thousands of
  brackets deep overflowed the engine's stack and killed its process).

The dataset clause (``FROM`` / ``FROM NAMED``) is read from the same parse, so the
caller can let a query's own dataset win over the union default graph.

The parse costs 5-40 ms, more than most queries take to run. It is skipped only when
its answer is known without it: a text holding neither the letters ``service`` nor
``from`` (in any case) nor a backslash (SPARQL's ``\\u`` escapes could spell either word)
can name no endpoint and no dataset, and one holding none of the words an update
operation starts with (``insert delete load clear create drop copy move add``, as words:
not inside a longer name such as an IRI's hex digits) is no update. A text that does
hold one is parsed once; its shape is kept by text (a bounded cache: the named queries
are the same texts every time).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from ..errors import QueryError, QueryRefusedError
from ..storage.sparql_values import SPARQL_HIDDEN

#: the default caps (the server's ``--max-query-bytes`` / ``--max-query-depth`` /
#: ``--max-query-patterns``: :func:`pattern_count`, the queries here count at most 27 /
#: ``--max-query-operators``: :func:`operator_count`, the named queries' cap)
MAX_QUERY_BYTES: Final = 100_000
MAX_QUERY_DEPTH: Final = 128
MAX_QUERY_PATTERNS: Final = 100
MAX_QUERY_OPERATORS: Final = 1000

# SPARQL's lexical rules, only as far as nesting needs them: strings, IRIs, comments (which
# end at CR or LF) and backslash escapes (``ex:a\'b`` is a name, not a string) hide
# brackets. This count only words the 400 for a deep query; the workers' large stack is
# what keeps a miscounted query from overflowing the engine.
_LEX: Final = re.compile(r"""
    (?P<skip>""" + SPARQL_HIDDEN + r""")
  | (?P<open><<|[{(\[])
  | (?P<close>>>|[})\]])
  | [^\\\#'"<>{}()\[\]]+
  | .
""", re.VERBOSE | re.DOTALL)


def nesting_depth(text: str) -> int:
    """How deeply brackets (``{ ( [ <<``) nest in a query, outside strings and comments."""
    depth = deepest = 0
    for m in _LEX.finditer(text):
        kind = m.lastgroup
        if kind == "open":
            depth += 1
            deepest = max(deepest, depth)
        elif kind == "close":
            depth = max(0, depth - 1)
    return deepest


#: an operator of an expression or a path, outside strings, IRIs and comments
_OPERATOR: Final = re.compile(r"(?P<skip>" + SPARQL_HIDDEN + r")|\|\||&&|[|/^*+!=<>-]",
                              re.VERBOSE | re.DOTALL)


def operator_count(text: str) -> int:
    """How many operators (``|| && ! = < > + - * / | ^``) a query holds, outside strings,
    IRIs and comments: what a chain costs the engine's parser and planner — a name's
    ``-`` is counted too, so it counts high, never low."""
    return sum(1 for m in _OPERATOR.finditer(text) if m.lastgroup != "skip")


#: what :func:`pattern_count` reads: strings, IRIs and comments (a term, or nothing), the
#: brackets, the separators of triples, a path's steps, other operators, and words (a
#: variable, which holds no dot; a number, its sign and dot included; a name or a keyword,
#: a dot inside included as SPARQL reads it — ``?o.e:s`` is two terms, ``e:o.e:s`` one)
_PATTERNS: Final = re.compile(r"""
    (?P<skip>""" + SPARQL_HIDDEN + r""")
  | (?P<open><<|[{(\[])
  | (?P<close>>>|[})\]])
  | (?P<word>[?$]\w+|[+-]?(?:\d*\.\d+|\d+)(?:[eE][+-]?\d+)?|[\w:%-]+(?:\.+[\w:%-]+)*)
  | (?P<sep>[.;,])
  | (?P<step>[/^])
  | (?P<op>[|&!=<>+*])
  | \s+
  | .
""", re.VERBOSE | re.DOTALL)


#: what may stand before a keyword: nothing, SPARQL's white space or a bracket — a word
#: glued to anything else (``"x"@values``, ``e:a\\-values``, ``e:a·values``) is part of a
#: language tag or a name the words here do not read whole (``tests/security/test_353``)
_BEFORE_KEYWORD: Final = frozenset(" \t\r\n{}()")


def _keyword_at(text: str, at: int, after: str) -> bool:
    """Whether the word at ``at`` stands where a keyword can (``after``: the token before)."""
    return at == 0 or (text[at - 1] in _BEFORE_KEYWORD and not after.startswith("\\"))


#: the words after which a group's next term starts a triples block of its own
_BLOCK_WORDS: Final = frozenset({"FILTER", "OPTIONAL", "MINUS", "GRAPH", "UNION", "SERVICE",
                                 "BIND", "VALUES", "EXISTS", "NOT", "SILENT"})


def _bare_word(token: str, upper: str) -> bool:
    """A name that is no term: not a variable, a prefixed name, a number or a boolean."""
    return token[0].isalpha() and ":" not in token and upper not in ("TRUE", "FALSE")


@dataclass
class _Frame:
    """One open bracket, as :func:`pattern_count` reads it."""

    bracket: str
    #: a group's data (a `VALUES` block's rows): nothing in it is counted
    data: bool
    #: a ``(``: the terms and groups it holds, and whether it holds nothing else
    items: int = 0
    plain: bool = True
    #: a ``{``: its next term starts a triples block (none started, or one was ended)
    fresh: bool = True
    #: the count when it opened
    start: int = 0


def pattern_count(text: str) -> int:
    """How many triple patterns a query's groups can join, counted high, never low: the
    first triple of each triples block (a group's first term, and the first after a
    ``FILTER``, ``OPTIONAL``, ``BIND``, a sub-group …), each separator of triples
    (``. ; ,``), each blank node and quoted triple opened (``[ <<``), each group that holds
    nothing counted (it is joined or unioned all the same), each step of a path
    (``/ ^``), and each item of a collection — a ``( … )`` holding terms alone (no ``,``, no
    operator), two triples an item. ``VALUES`` rows are data, not patterns. Oxigraph plans
    a group's joins in a time that grows as the third to fourth power of its triples,
    before it reads a row: 200 triples that share a subject took it 11 s on an empty store,
    400 took 209 s (``tests/security/test_343``)."""
    count, values = 0, False  # `values`: a `VALUES` read, its `{` not yet
    frames: list[_Frame] = []
    token = ""
    for m in _PATTERNS.finditer(text):
        kind, (token, after) = m.lastgroup, (m.group(), token)  # `after`: the token before
        top = frames[-1] if frames else None
        if kind == "open":  # INVARIANT: all within a data block is data
            data = (token == "{" and values) or (top is not None and top.data)
            values = values and token != "{"
            frames.append(_Frame(token, data, start=count))
            count += token in ("[", "<<") and not data
        elif kind == "close" and top is not None:
            frames.pop()
            if top.bracket == "(" and top.plain and not top.data:
                count += 2 * top.items  # `rdf:first` and `rdf:rest` an item
            # a group is joined (or unioned) with the others whether it holds a triple or
            # not: 3,000 groups each binding a value, no triple in any, counted none and
            # held a worker to the timeout (test_353); one that counted nothing counts one
            count += top.bracket == "{" and not top.data and count == top.start
            if frames:
                frames[-1].items += 1
                frames[-1].fresh = True
        elif kind in ("word", "skip") and not token.startswith("#"):
            word = token.upper()
            # INVARIANT: only the keyword opens data (a word spelled so elsewhere hid a group)
            values = values or (word == "VALUES" and _keyword_at(text, m.start(), after))
            if top is not None:
                top.items += 1
                # a function's or a keyword's name (`STR`, `AS`): no collection holds one
                top.plain = top.plain and not _bare_word(token, word)
                if top.bracket == "{" and not top.data:
                    count += top.fresh and word not in _BLOCK_WORDS
                    top.fresh = word in _BLOCK_WORDS
        elif kind == "sep" and top is not None:
            if top.bracket == "(":
                top.plain = False
            elif not top.data:
                count += 1
                top.fresh = False
        elif kind in ("step", "op") and top is not None:
            count += kind == "step" and not top.data
            top.plain = False
    return count


_COUNTS: dict[str, tuple[int, int]] = {}


def _counts_of(text: str) -> tuple[int, int]:
    """:func:`pattern_count` and :func:`operator_count`, kept by text as a query's shape
    is (:func:`known_shape`): the named queries are the same texts every time, and the two
    counts take 0.1 to 0.5 ms of a 2 KB text (``bench/bench_query_caps.py``)."""
    counts = _COUNTS.get(text)
    if counts is None:
        counts = (pattern_count(text), operator_count(text))
        _keep(_COUNTS, text, text, counts)
    return counts


def check_size(text: str, *, max_bytes: int = MAX_QUERY_BYTES,
               max_depth: int = MAX_QUERY_DEPTH, max_operators: int | None = None,
               max_patterns: int | None = None, split: str = "split the query") -> None:
    """Refuse a query over the size or nesting cap, or holding more than
    ``max_operators`` operators (:func:`operator_count`; the named queries and graph
    policies, parsed on the process's own stack: ``tests/security/test_328``, ``test_329``),
    or joining more than ``max_patterns`` triple patterns (:func:`pattern_count`: what the
    engine would plan for longer than the query may run, ``test_343``), before any parser
    sees it. ``split``: the hint when the operators are over."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise QueryError(f"the query is {size} bytes, over the {max_bytes} byte cap")
    # depth <= the number of opening brackets: a text with few of them needs no lexing
    opens = text.count("{") + text.count("(") + text.count("[") + text.count("<<")
    depth = nesting_depth(text) if opens > max_depth else 0
    if depth > max_depth:
        raise QueryError(f"the query nests {depth} levels deep, over the cap of {max_depth}",
                         hint="flatten the query")
    if max_patterns is None and max_operators is None:
        return
    patterns, operators = _counts_of(text)
    if max_patterns is not None and patterns > max_patterns:
        raise QueryError(f"the query joins {patterns} triple patterns or path steps, over "
                         f"the cap of {max_patterns}",
                         hint="split the query, or shorten its paths")
    if max_operators is not None and operators > max_operators:
        raise QueryError(f"it holds more than {max_operators} operators", hint=split)


@dataclass(frozen=True)
class QueryShape:
    """What the parsed query does that matters here."""

    #: each SERVICE endpoint, resolved; None for a variable endpoint
    services: tuple[str | None, ...]
    #: the query has its own FROM / FROM NAMED
    has_dataset: bool


def _walk(node: Any, services: list[str | None], seen: set[int]) -> None:
    from rdflib.plugins.sparql.parserutils import CompValue
    from rdflib.term import URIRef

    stack = [node]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, CompValue):
            if item.name == "ServiceGraphPattern":
                term = item.get("term")
                services.append(str(term) if isinstance(term, URIRef) else None)
            stack.extend(item.values())
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set):
            stack.extend(item)


def parse_shape(text: str, *, base_iri: str | None = None) -> QueryShape:
    """Parse the query (raises QueryError when it does not parse, QueryRefusedError on update).

    The parser runs on a thread of its own: pyparsing keeps its last exception (and so
    the frames above it) alive, which would otherwise pin the caller's frame — and the
    store it holds, whose lock then outlives ``close()``.
    """
    box: list[QueryShape | BaseException] = []

    def run() -> None:
        try:
            box.append(_parse_shape(text, base_iri))
        except BaseException as exc:  # handed to the caller below
            box.append(exc)

    thread = threading.Thread(target=run, name="sparql-check", daemon=True)
    thread.start()
    thread.join()
    result = box[0]
    if isinstance(result, BaseException):
        raise result.with_traceback(None)
    return result


_PARSER_LOCK = threading.Lock()
K = TypeVar("K")
V = TypeVar("V")

#: the shape of a text that can name no SERVICE and no dataset (see the module docstring)
PLAIN_SHAPE: Final = QueryShape(services=(), has_dataset=False)
_SHAPES: dict[tuple[str, str | None], QueryShape] = {}
_SHAPES_MAX: Final = 256
#: longer texts are parsed every time rather than kept (the cache stays a few MB)
_SHAPES_TEXT_MAX: Final = 20_000


#: a text holding none of these (in any case, anywhere) names no endpoint and no dataset
_TELLING: Final = ("service", "from", "\\")
#: ... and one holding none of these *as words* is no update: an update's keyword stands
#: apart (after a space, ``>``, ``;``, ``}``; never inside a name); in an IRI's hex
#: (``act%3A0addf...``) ``add`` is no keyword, and it made 7 of the bench's 400 texts pay
#: for a parse (40-50 ms each, 300 ms and 27 MB RSS for rdflib's first). Whatever this
#: misses cannot run anyway: the engine's query parser reads no update (and a text it
#: refuses is parsed here before it is answered, :func:`~.queries.execute`)
_UPDATE_WORDS: Final = ("insert", "delete", "load", "clear", "create", "drop", "copy", "move",
                        "add")


def _in_name(char: str) -> bool:
    return char.isalnum() or char == "_"


def _has_word(lowered: str, word: str) -> bool:
    """``word`` in ``lowered`` with no letter, digit or ``_`` on either side (``\\b``)."""
    at = lowered.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not _in_name(lowered[at - 1])) \
                and (end == len(lowered) or not _in_name(lowered[end])):
            return True
        at = lowered.find(word, at + 1)
    return False


def _plain(text: str) -> bool:
    lowered = text.lower()
    return not any(word in lowered for word in _TELLING) \
        and not any(_has_word(lowered, word) for word in _UPDATE_WORDS)


def known_shape(text: str, base_iri: str | None) -> QueryShape:
    """The query's shape, without parsing when that is safe, else from the cache or a parse."""
    if _plain(text):
        return PLAIN_SHAPE
    key = (text, base_iri)
    shape = _SHAPES.get(key)
    if shape is None:
        shape = parse_shape(text, base_iri=base_iri)
        _keep(_SHAPES, key, text, shape)
    return shape


def _keep(cache: dict[K, V], key: K, text: str, value: V) -> None:
    """Keep ``value`` for ``key`` (a query ``text``'s) in ``cache``: at most
    :data:`_SHAPES_MAX` entries, the oldest out first; a text past :data:`_SHAPES_TEXT_MAX`
    is not kept (the caches stay a few MB)."""
    if len(text) > _SHAPES_TEXT_MAX:
        return
    if len(cache) >= _SHAPES_MAX:
        cache.pop(next(iter(cache)))
    cache[key] = value


def _parse(text: str) -> Any:
    """rdflib's parse, without its SERVICE post-step.

    rdflib re-finds each SERVICE's text by searching the *whole* query again (for its own
    evaluator): that fails on a prefixed name inside the SERVICE body and recurses
    without end on a nested SERVICE. The checker needs the tree, not that text, so the
    step is switched off for the duration of this parse (under a lock).
    """
    from types import MethodType

    from rdflib.plugins.sparql import parser as sparql_parser
    from rdflib.plugins.sparql.parserutils import Comp

    element = sparql_parser.ServiceGraphPattern

    def post_parse(self: Comp, instring: str, loc: int, tokens: Any) -> Any:
        self.name = "ServiceGraphPattern "  # not the name rdflib special-cases
        try:
            res = Comp.postParse(self, instring, loc, tokens)
        finally:
            self.name = "ServiceGraphPattern"
        res.name = "ServiceGraphPattern"
        return res

    with _PARSER_LOCK:
        element.postParse = MethodType(post_parse, element)  # type: ignore[method-assign]
        try:
            return sparql_parser.parseQuery(text)
        finally:
            del element.postParse


def _parse_shape(text: str, base_iri: str | None) -> QueryShape:
    from rdflib.plugins.sparql.algebra import translateQuery
    from rdflib.plugins.sparql.parser import parseUpdate

    try:
        parsed = _parse(text)
        query = translateQuery(parsed, base=base_iri)
    except RecursionError:
        raise QueryError("the query nests too deeply to be checked") from None
    except Exception as exc:  # pyparsing and the algebra raise many types
        try:
            parseUpdate(text)
        except Exception:  # not an update either: report the query error
            message = " ".join(str(exc).split())[:300]
            raise QueryError(f"the query does not parse: {message}") from None
        raise QueryRefusedError("SPARQL Update is refused: this graph is read-only",
                                hint="the journal is the only truth; the graph is its "
                                     "projection") from None
    services: list[str | None] = []
    _walk(query.algebra, services, set())
    dataset = query.algebra.get("datasetClause")
    return QueryShape(services=tuple(dict.fromkeys(services)), has_dataset=bool(dataset))


def check_query(text: str, *, allowed_services: Iterable[str] = (),
                base_iri: str | None = None, network_sandboxed: bool = False,
                max_bytes: int = MAX_QUERY_BYTES, max_depth: int = MAX_QUERY_DEPTH,
                max_patterns: int | None = None,
                max_operators: int | None = None) -> QueryShape | None:
    """Refuse what this query may not do; its shape, or None when only the engine can parse it.

    ``max_patterns``, ``max_operators``: the endpoint's caps on the triple patterns a query
    joins and the operators it chains (its workers pass them; the operator's own ``query
    --sparql`` is not held to them).

    ``network_sandboxed``: the caller runs the query where no socket can be opened; a
    query this parser cannot read is then left to the engine's parser.
    """
    check_size(text, max_bytes=max_bytes, max_depth=max_depth, max_patterns=max_patterns,
               max_operators=max_operators)
    try:
        shape = known_shape(text, base_iri)
    except QueryRefusedError:
        raise
    except QueryError:
        if network_sandboxed:
            return None
        raise
    allowed = set(allowed_services)
    for iri in shape.services:
        if iri is None:
            raise QueryRefusedError("a `SERVICE` whose endpoint is a variable is refused",
                                    hint="name the endpoint as an IRI the operator "
                                         "allow-listed")
        if iri not in allowed:
            raise QueryRefusedError(f"`SERVICE <{iri}>` is refused: this endpoint makes no "
                                    "outbound requests", hint="an operator may allow-list it "
                                    "(`cradle-kg serve --allow-service IRI`)")
    return shape


__all__ = ["MAX_QUERY_BYTES", "MAX_QUERY_DEPTH", "MAX_QUERY_OPERATORS", "MAX_QUERY_PATTERNS",
           "PLAIN_SHAPE",
           "QueryShape", "check_query", "check_size", "known_shape", "nesting_depth",
           "operator_count", "parse_shape", "pattern_count"]
