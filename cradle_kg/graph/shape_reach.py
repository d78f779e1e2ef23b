"""Which predicates a shapes graph can see: the rest of a data graph cannot change its report.

A SHACL validation reads the data graph only through its shapes: targets (``rdf:type`` and
``rdfs:subClassOf`` for a class target or ``sh:class``, the property of
``sh:targetSubjectsOf`` / ``sh:targetObjectsOf``), property paths, the property pairs
(``sh:equals`` …) — every one an IRI written in the shapes graph — and SPARQL-based
constraints, whose patterns match the predicates their text names. A triple whose predicate
none of these names is invisible to every shape, so leaving it out of the data graph
leaves the report as it was — as long as no shape can see *any* predicate:

* ``sh:closed`` reads every predicate of its focus nodes;
* a SPARQL pattern with a variable as its predicate (``?s ?p ?o``) or a negated property
  set (``!cradle:x``) matches predicates its text does not name;
* a zero-length path (``*``, ``?``) between two unbound ends ranges over every node of
  the graph, and so over what the graph holds.

:func:`observed_predicates` reads the shapes graph and gives the predicates it can see —
every IRI the graph or its SPARQL texts name (conservatively: not only those in a
predicate's place), plus ``rdf:type`` and ``rdfs:subClassOf`` — or None when one of the
three holds (or a SPARQL text is one it cannot read with certainty): then every triple
stays. The commit check (:mod:`cradle_kg.loop.integrity`) validates only the triples
whose predicate is in the set: a governed read's 113 triples are 33 (the SHACL engine
reads each one it is given). :func:`observed_classes` narrows the ``rdf:type`` triples
among them to the classes the shapes name: 18 are left.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

import pyoxigraph as ox

from .vocab import RDF_NS, RDFS_NS, SH_NS

_SH_CLOSED: Final = SH_NS + "closed"
_SPARQL_TEXTS: Final = frozenset(SH_NS + p for p in ("select", "ask", "construct", "update"))
_SH_PREFIX: Final = SH_NS + "prefix"
_SH_NAMESPACE: Final = SH_NS + "namespace"
_ALWAYS: Final = (RDF_NS + "type", RDFS_NS + "subClassOf")

#: a SPARQL text's tokens: comments and strings (dropped), IRIs, prefixed names, variables,
#: blank node labels, numbers, words, and any other character on its own
_TOKEN: Final = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
               |'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
  | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
  | (?P<bnode>_:[\w.-]*)
  | (?P<var>[?$][\w]+)
  | (?P<pname>(?:[A-Za-z](?:[\w-]|\.(?=[\w-]))*)?:(?:[\w:%-]|\.(?=[\w:%-]))*)
  | (?P<number>[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)
  | (?P<word>[A-Za-z_]\w*)
  | (?P<space>\s+)
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)
#: an absolute IRI N-Triples writes as it is (no escape, no relative reference)
_PLAIN_IRI: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[!#-;=?-\[\]_a-z~]*")
#: tokens that stand for an RDF term in a pattern
_TERMS: Final = frozenset({"iri", "bnode", "var", "pname", "string", "number"})


def _scan(shapes_ntriples: str, gives_up: Callable[[ox.Triple], bool],
          ) -> tuple[set[str], list[str], dict[str, set[str]]] | None:
    """Of a shapes graph: every IRI it names, its SPARQL texts, and the prefixes it
    declares (``sh:prefix`` / ``sh:namespace``) — or None at the first triple
    ``gives_up`` holds for."""
    iris: set[str] = set()
    texts: list[str] = []
    declared: dict[object, dict[str, str]] = {}
    for q in ox.parse(shapes_ntriples, format=ox.RdfFormat.N_TRIPLES):
        t = q.triple
        if gives_up(t):
            return None
        for term in (t.subject, t.predicate, t.object):
            if isinstance(term, ox.NamedNode):
                iris.add(term.value)
        p = t.predicate.value
        if p in _SPARQL_TEXTS and isinstance(t.object, ox.Literal):
            texts.append(t.object.value)
        elif p in (_SH_PREFIX, _SH_NAMESPACE) and isinstance(t.object, ox.Literal):
            declared.setdefault(t.subject, {})[p] = t.object.value
    prefixes: dict[str, set[str]] = {}
    for d in declared.values():
        if _SH_PREFIX in d and _SH_NAMESPACE in d:
            prefixes.setdefault(d[_SH_PREFIX], set()).add(d[_SH_NAMESPACE])
    return iris, texts, prefixes


def observed_predicates(shapes_ntriples: str) -> frozenset[str] | None:
    """The predicates (``<iri>``, as N-Triples writes them) the shapes can see, or None
    when they can see any (see the module)."""
    scanned = _scan(shapes_ntriples, lambda t: t.predicate.value == _SH_CLOSED
                    and isinstance(t.object, ox.Literal)
                    and t.object.value.strip().lower() in ("true", "1"))
    if scanned is None:
        return None
    iris, texts, prefixes = scanned
    iris |= set(_ALWAYS)
    for text in texts:
        named = _sparql_predicates(text, prefixes)
        if named is None:
            return None
        iris |= named
    if any(not _PLAIN_IRI.fullmatch(iri) for iri in iris):
        return None  # an IRI N-Triples may write escaped, or a relative one: not compared
    return frozenset(f"<{iri}>" for iri in iris)


_TYPE_IRI: Final = RDF_NS + "type"


def observed_classes(shapes_ntriples: str) -> frozenset[str] | None:
    """The classes (``<iri>``, as N-Triples writes them) whose ``rdf:type`` triples the
    shapes can see — every IRI the shapes graph or its SPARQL texts name — or None when a
    type triple of any class may count (then every one stays).

    A shape reads a node's types through a class target (``sh:targetClass``, an implicit
    one: the shape's own IRI) or ``sh:class`` — both name the class, and ``sh:class``
    follows ``rdfs:subClassOf`` in the data, which the core projection never writes
    (a pack's projection may: the checker keeps every type then) — or through
    ``rdf:type`` itself: as a path, a target predicate, a property pair, a list's value
    (any object position in the shapes graph), or in a SPARQL text (named, or as the
    keyword ``a``); each of those may count or compare types whatever their class, and
    turns the filter off, as :func:`observed_predicates` being None does."""
    if observed_predicates(shapes_ntriples) is None:
        return None
    scanned = _scan(shapes_ntriples, lambda t: isinstance(t.object, ox.NamedNode)
                    and t.object.value == _TYPE_IRI)
    if scanned is None:
        return None
    iris, texts, prefixes = scanned
    for text in texts:
        if any(m.lastgroup == "word" and m.group() == "a" for m in _TOKEN.finditer(text)):
            return None
        named = _sparql_predicates(text, prefixes)
        if named is None or _TYPE_IRI in named:
            return None
        iris |= named
    return frozenset(f"<{iri}>" for iri in iris)


def _sparql_predicates(text: str, prefixes: dict[str, set[str]]) -> set[str] | None:
    """Every IRI a SPARQL text names, or None when a pattern of it may match a predicate
    it does not name, or when it names a prefix that is not declared."""
    tokens: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        if kind in ("comment", "space"):
            continue
        tokens.append((kind, m.group()))
    known = {prefix: set(spaces) for prefix, spaces in prefixes.items()}
    out: set[str] = set()
    for i, (kind, value) in enumerate(tokens):
        if kind == "word" and value.upper() == "PREFIX" and i + 2 < len(tokens) \
                and tokens[i + 1][0] == "pname" and tokens[i + 2][0] == "iri":
            known.setdefault(tokens[i + 1][1].split(":", 1)[0], set()).add(
                tokens[i + 2][1][1:-1])
    for i, (kind, value) in enumerate(tokens):
        before = tokens[i - 1] if i else ("other", "")
        after = tokens[i + 1] if i + 1 < len(tokens) else ("other", "")
        if kind == "iri":
            out.add(value[1:-1])
        elif kind == "pname":
            prefix, local = value.split(":", 1)
            if prefix not in known:
                return None
            out.update(space + local for space in known[prefix])
        elif kind == "var":
            # a variable between two terms is a predicate: ``?s ?p ?o``, ``; ?p ?o``,
            # ``[ ?p ?o``; so is one after ``a`` or a term and before a term (over-broad:
            # ``SELECT ?a ?b ?c`` is refused too, which only costs the filter)
            if (before[0] in _TERMS or before[1] in (";", "[", "a", "]")) \
                    and (after[0] in _TERMS or after[1] in ("[", "(", "true", "false")):
                return None
        elif kind == "other":
            if value == "\\":
                return None  # an escape in a prefixed name: not read here
            if value == "!" and after[1] not in ("=",) and (
                    after[0] in ("iri", "pname") or after[1] in ("(", "^", "a")):
                return None  # a negated property set (or a negation we cannot tell apart)
            if value == "*" and not (before[1] == "(" and after[1] == ")") \
                    and not (before[0] == "word" and before[1].upper() in ("SELECT",
                                                                          "DISTINCT",
                                                                          "REDUCED")):
                return None  # a zero-or-more path (or a product we cannot tell apart)
            if value == "?":
                return None  # a zero-or-one path
    return out


__all__ = ["observed_classes", "observed_predicates"]
