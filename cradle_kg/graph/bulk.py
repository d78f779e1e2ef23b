"""``validate --all`` on a big store: the report of one whole-graph validation, fast.

Validating the whole store the plain way (``GraphStore.nquads()`` + one Rust call) costs
~15 s of dump and ~17 s of validation on a 1.1M-quad store. Measured on that store
(bench/bench_graph.py, 2 cores), the time goes to three places, and each has a fix that
keeps the result identical to validating the whole graph at once:

1. **Getting the data out.** Every term Oxigraph hands back is a RocksDB look-up
   (~3-4 µs, hot or cold), so any full dump is slow — ``Store.dump`` in Rust included
   (16-23 s) — and threads do not help (pyoxigraph holds the GIL while it serializes).
   So only the triples a shape can read are fetched: one ``SELECT ?s ?o`` per
   predicate the shapes name (the predicate and the graph name are never decoded), and
   one ``SELECT ?s`` per class they name for ``rdf:type``, serialized by Oxigraph
   as TSV and turned into Turtle lines with two ``bytes.replace``: ~1/3 of the quads.

   Why it is exact: a SHACL validation reads the data graph only through its targets
   (``sh:targetClass``/``targetSubjectsOf``/``targetObjectsOf``), value paths
   (``sh:path``), class membership (``rdf:type`` + ``rdfs:subClassOf*``), property-pair
   constraints (``sh:equals``...) and SPARQL patterns. :func:`shape_projection` collects
   the predicates and classes all of these name — SPARQL through rdflib's algebra — and
   gives up (``None``: every predicate is fetched) on anything it cannot bound:
   ``sh:closed``, a variable or negated predicate in SPARQL, SPARQL-based targets or
   constraint components, ``$PATH``. A triple whose predicate no shape names is never
   read, so leaving it out changes no result. ``rdf:type`` triples are fetched for the
   named classes only, unless a shape reads types some other way or the data holds an
   ``rdfs:subClassOf`` triple (then all of them).

2. **Rule 6** was a SPARQL join with ``$this`` in object position, which the Rust engine
   evaluates by scanning every ``cradle:contains`` triple for each executed action
   (quadratic: 7-11 s). It is now core SHACL with an inverse path (shapes/integrity.ttl).

3. **Rule 8** (one execution per idempotency key) has the same scan (``?value
   cradle:idempotencyKey ?key`` with ``?key`` bound: 11-12 s) and cannot be said in core
   SHACL. Its query only ever relates actions that share a key, so it is validated, with
   the Rule 8 shape alone, over the ``idempotencyKey``/``executedAt`` triples of the
   actions whose key is held by two subjects or more (usually none), in groups of keys.
   That argument is about the query as shipped: if the shape's text changes, rule 8 is
   validated like any other shape (slow, still exact).

The work is spread over processes by **shape groups**, not by runs: a report is the
union of the results of each targeted shape, so targeted shapes that read disjoint
predicates are validated apart, each group by one worker that fetches its own triples
through a read-only handle on the store (groups largest first). Splitting by run graphs
would need every node a shape reads to live in the run graph of its focus node; the
projection gives that for rules 1-7 but store content need not (hand edits, imports), and
rule 8 is global anyway — shape groups need no assumption about the data.

``validate_whole`` is the reference the tests hold this against: the store's canonical
N-Quads validated in one call.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyoxigraph as ox
from rdflib import OWL, RDF, RDFS, BNode, Graph, Literal, URIRef
from rdflib import paths as rpaths
from rdflib.collection import Collection
from rdflib.plugins.sparql import prepareQuery
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Node

from ..storage.graph import META_GRAPH, GraphStore
from ..storage.oxigraph import read_only_tsv
from .shacl import (
    RustShaclEngine,
    Shapes,
    ValidationReport,
    Violation,
    sorted_violations,
    to_ntriples,
)
from .vocab import CRADLE_NS, SH

__all__ = ["Projection", "shape_projection", "validate_store", "validate_whole"]

_TYPE: Final = str(RDF.type)
_SUBCLASS: Final = str(RDFS.subClassOf)
_IDEM: Final = f"{CRADLE_NS}idempotencyKey"
_EXECUTED: Final = f"{CRADLE_NS}executedAt"
_RULE8: Final = f"{CRADLE_NS}Rule8Shape"
# the Rule 8 query the by-key grouping is proved for (whitespace-normalized)
_RULE8_QUERY: Final = (
    "SELECT DISTINCT $this ?value WHERE { "
    "$this cradle:idempotencyKey ?key ; cradle:executedAt ?at . "
    "?value cradle:idempotencyKey ?key ; cradle:executedAt ?otherAt . "
    "FILTER (?value != $this) "
    "FILTER (?otherAt < ?at || (?otherAt = ?at && STR(?value) < STR($this))) }")
_TARGETS: Final = (SH.targetClass, SH.targetNode, SH.targetSubjectsOf, SH.targetObjectsOf,
                   SH.target)
# keys of rule-8 input per validation call: bounds the engine's quadratic scan
_RULE8_BUCKET: Final = 2000


# --- what the shapes read -------------------------------------------------------------


@dataclass(frozen=True)
class Projection:
    """The part of the data graph the shapes can read."""

    predicates: frozenset[str]  # every triple with one of these predicates
    classes: frozenset[str]  # ``?s rdf:type C`` for these C (all types if ``all_types``)
    all_types: bool


class _Unbounded(Exception):
    """The shapes may read triples of any predicate."""


def shape_projection(shapes: Shapes | Graph) -> Projection | None:
    """The predicates and classes ``shapes`` can read, or ``None`` when that cannot be
    bounded (then every triple is needed)."""
    try:
        return _projection(shapes.graph if isinstance(shapes, Shapes) else shapes)
    except _Unbounded:
        return None


def _projection(g: Graph) -> Projection:
    preds: set[str] = set()
    classes: set[str] = set()
    all_types = False
    if any(str(o).lower() == "true" for o in g.objects(None, SH.closed)):
        raise _Unbounded("sh:closed")
    for pred in (SH.target, SH.validator, SH.nodeValidator, SH.propertyValidator):
        if any(True for _ in g.subject_objects(pred)):
            raise _Unbounded(str(pred))
    for path in g.objects(None, SH.path):
        preds |= _shacl_path(g, path)
    for pred in (SH.targetSubjectsOf, SH.targetObjectsOf, SH.equals, SH.disjoint,
                 SH.lessThan, SH.lessThanOrEquals):
        preds |= {_iri(o) for o in g.objects(None, pred)}
    for pred in (SH.targetClass, SH["class"]):
        classes |= {_iri(o) for o in g.objects(None, pred)}
    for kind in (RDFS.Class, OWL.Class):  # implicit class targets
        classes |= {str(s) for s in g.subjects(RDF.type, kind)
                    if (s, RDF.type, SH.NodeShape) in g or (s, RDF.type, SH.PropertyShape) in g}
    for constraint in g.objects(None, SH.sparql):
        select = g.value(constraint, SH.select)
        if not isinstance(select, Literal):
            raise _Unbounded("a SPARQL constraint without sh:select")
        p, c, every = _sparql(str(select), _prefixes(g, constraint))
        preds |= p
        classes |= c
        all_types |= every
    if _TYPE in preds:
        all_types = True
    if classes or all_types:
        preds.add(_SUBCLASS)
    preds.discard(_TYPE)
    return Projection(frozenset(preds), frozenset(classes), all_types)


def _iri(node: Node) -> str:
    if not isinstance(node, URIRef):
        raise _Unbounded(f"not an IRI: {node}")
    return str(node)


def _shacl_path(g: Graph, path: Node) -> set[str]:
    if isinstance(path, URIRef):
        return {str(path)}
    if not isinstance(path, BNode):
        raise _Unbounded(f"bad sh:path {path}")
    if g.value(path, RDF.first) is not None:  # a sequence
        return {p for member in Collection(g, path) for p in _shacl_path(g, member)}
    alt = g.value(path, SH.alternativePath)
    if alt is not None:
        return {p for member in Collection(g, alt) for p in _shacl_path(g, member)}
    for pred in (SH.inversePath, SH.zeroOrMorePath, SH.oneOrMorePath, SH.zeroOrOnePath):
        inner = g.value(path, pred)
        if inner is not None:
            return _shacl_path(g, inner)
    raise _Unbounded(f"unknown path form {path}")


def _prefixes(g: Graph, constraint: Node) -> str:
    lines = []
    for holder in g.objects(constraint, SH.prefixes):
        for decl in g.objects(holder, SH.declare):
            prefix, ns = g.value(decl, SH.prefix), g.value(decl, SH.namespace)
            lines.append(f"PREFIX {prefix}: <{ns}>")
    return "\n".join(lines) + "\n"


def _sparql(query: str, prefixes: str) -> tuple[set[str], set[str], bool]:
    if "$PATH" in query:
        raise _Unbounded("$PATH")
    try:
        algebra = prepareQuery(prefixes + query).algebra
    except Exception as exc:  # pyparsing errors and friends: whatever we cannot read
        raise _Unbounded(f"SPARQL: {exc}") from exc
    preds: set[str] = set()
    classes: set[str] = set()
    all_types = False
    for _, p, o in _bgp_triples(algebra):
        names = _sparql_path(p)
        preds |= names
        if _TYPE in names:
            simple = p == RDF.type or (
                isinstance(p, rpaths.SequencePath) and len(p.args) == 2
                and p.args[0] == RDF.type and isinstance(p.args[1], rpaths.MulPath)
                and p.args[1].path == RDFS.subClassOf)
            if simple and isinstance(o, URIRef):
                classes.add(str(o))
            else:
                all_types = True
    preds.discard(_TYPE)
    return preds, classes, all_types


def _bgp_triples(node: object) -> Iterator[tuple[Node, object, Node]]:
    if isinstance(node, CompValue):
        for key, value in node.items():
            if key == "triples":
                # a translated BGP holds (s, p, o) tuples; a TriplesBlock left untranslated
                # (inside FILTER NOT EXISTS) holds flat lists, s p o s p o … for `;` lists:
                # read each in threes, or the pattern's later triples are never fetched
                for t in value:
                    for i in range(0, len(t) - 2, 3):
                        yield t[i], t[i + 1], t[i + 2]
            else:
                yield from _bgp_triples(value)
        # INVARIANT: an EXISTS / NOT EXISTS pattern translated in place is an attribute
        # (rdflib's translateExists), the FILTERs nested in it removed from the part list
        # its item keeps: read only from the items, the predicates of a FILTER NOT EXISTS
        # inside another were never fetched, and `validate --all` said such a pattern
        # matched nothing (rule 2's revoke, tests/security/test_318)
        for value in vars(node).values():
            if isinstance(value, CompValue | dict | list | tuple):
                yield from _bgp_triples(value)
    elif isinstance(node, dict):
        for value in node.values():
            yield from _bgp_triples(value)
    elif isinstance(node, list | tuple | set):
        for value in node:
            yield from _bgp_triples(value)


def _sparql_path(p: object) -> set[str]:
    if isinstance(p, URIRef):
        return {str(p)}
    if isinstance(p, rpaths.SequencePath | rpaths.AlternativePath):
        return {n for arg in p.args for n in _sparql_path(arg)}
    if isinstance(p, rpaths.InvPath):
        return _sparql_path(p.arg)
    if isinstance(p, rpaths.MulPath):
        return _sparql_path(p.path)
    raise _Unbounded(f"predicate {p!r}")  # a variable, a negated property set


# --- shapes split: the Rule 8 shape apart ----------------------------------------------


def _targeting(shapes: Shapes, keep: set[str] | None, drop: set[str]) -> RustShaclEngine:
    """An engine over all the shapes in which only ``keep`` (or all but ``drop``) have
    targets: the others still compile (they may be referenced) but report nothing."""
    g = Graph()
    for t in shapes.graph:
        if t[1] in _TARGETS and (str(t[0]) in drop or (keep is not None
                                                      and str(t[0]) not in keep)):
            continue
        g.add(t)
    return RustShaclEngine(Shapes(ntriples=to_ntriples(g), rule_numbers=shapes.rule_numbers,
                                  files=shapes.files, read_into=g))


def _rule8_apart(shapes: Shapes) -> bool:
    """The shipped Rule 8 shape is present, unchanged: its results come from actions
    sharing a key only, so it can be validated on those alone."""
    g, shape = shapes.graph, URIRef(_RULE8)
    targets = {(p, o) for p in _TARGETS for o in g.objects(shape, p)}
    if targets != {(SH.targetSubjectsOf, URIRef(_IDEM))}:
        return False
    sparql = list(g.objects(shape, SH.sparql))
    others = {p for p, _ in g.predicate_objects(shape)} - {
        RDF.type, RDFS.label, RDFS.comment, URIRef(f"{CRADLE_NS}ruleNumber"), SH.sparql,
        *_TARGETS}
    if len(sparql) != 1 or others:
        return False
    select = g.value(sparql[0], SH.select)
    return select is not None and " ".join(str(select).split()) == _RULE8_QUERY


# --- shape groups: shapes that read disjoint data validate apart --------------------
#
# A validation report is the union of the results of each shape that has targets; the
# shapes a targeted shape references (sh:node, sh:property...) are evaluated through it.
# So the targeted ("root") shapes can be validated in groups, each group with the others'
# targets removed, over the triples its own shapes read — and the union of the groups'
# results is the report of all of them at once. Roots that read a common predicate or
# class share a group (each triple is fetched and parsed once); groups go to the worker
# processes largest first, each worker fetching and validating its group itself.

Job = tuple[str, str]  # ("p", predicate): its (s, o) pairs; ("c", class): its instances


@dataclass(frozen=True)
class _Group:
    roots: frozenset[str]
    jobs: tuple[Job, ...]
    rule8: bool = False  # the Rule 8 shape alone, validated key group by key group
    rows: int = 0


def _roots(g: Graph) -> set[Node]:
    roots = {s for p in _TARGETS for s in g.subjects(p, None)}
    for kind in (RDFS.Class, OWL.Class):  # implicit class targets
        roots |= {s for s in g.subjects(RDF.type, kind)
                  if (s, RDF.type, SH.NodeShape) in g or (s, RDF.type, SH.PropertyShape) in g}
    return roots


def _reachable(g: Graph, root: Node) -> Graph:
    """The triples of the shapes graph reachable from ``root`` (its own shapes, lists,
    referenced shapes, prefix declarations): everything its evaluation can consult."""
    out, seen, todo = Graph(), {root}, [root]
    while todo:
        for t in g.triples((todo.pop(), None, None)):
            out.add(t)
            if not isinstance(t[2], Literal) and t[2] not in seen:
                seen.add(t[2])
                todo.append(t[2])
    return out


def _plan(store: GraphStore, shapes: Shapes, graphs: Sequence[str] | None) -> list[_Group]:
    g = shapes.graph
    apart = _rule8_apart(shapes)
    values, filt = _graph_clause(graphs)
    subclasses: bool | None = None
    every: list[Job] | None = None
    parent: dict[Node, Node] = {}

    def find(n: Node) -> Node:
        while parent[n] != n:
            n = parent[n]
        return n

    jobs_of: dict[Node, set[Job]] = {}
    owner: dict[Job, Node] = {}
    for root in sorted(_roots(g), key=str):
        if apart and root == URIRef(_RULE8):
            continue
        proj = shape_projection(_reachable(g, root))
        if proj is None:
            if every is None:
                found = _select(store, f"SELECT DISTINCT ?p WHERE {{ {values} "
                                       f"GRAPH ?g {{ ?s ?p ?o }} {filt} }}")
                every = [("p", str(sol[0].value)) for sol in found]
            jobs = set(every)
        else:
            jobs = {("p", p) for p in proj.predicates}
            all_types = proj.all_types
            if proj.classes and not all_types:
                if subclasses is None:
                    # a subclass in the data makes `?s a Sub` count for sh:class Super
                    subclasses = store.ask(f"ASK {{ {values} "
                                           f"GRAPH ?g {{ ?s <{_SUBCLASS}> ?o }} {filt} }}")
                all_types = subclasses
            jobs |= {("p", _TYPE)} if all_types else {("c", c) for c in proj.classes}
        parent[root] = root
        jobs_of[root] = jobs
        for job in jobs:  # roots reading one predicate or class share a group
            if job in owner:
                parent[find(root)] = find(owner[job])
            else:
                owner[job] = root
    members: dict[Node, set[Node]] = {}
    for root in parent:
        members.setdefault(find(root), set()).add(root)
    groups = [_Group(roots=frozenset(str(r) for r in rs),
                     jobs=tuple(sorted({j for r in rs for j in jobs_of[r]})))
              for rs in members.values()]
    if not groups:  # no shape has targets: still a report, an empty one
        groups.append(_Group(roots=frozenset(), jobs=()))
    if apart:
        groups.append(_Group(roots=frozenset({_RULE8}), jobs=(("p", _IDEM), ("p", _EXECUTED)),
                             rule8=True))
    rows = _row_counts(store, {j for grp in groups for j in grp.jobs}, values, filt)
    sized = [_Group(grp.roots, grp.jobs, grp.rule8, sum(rows.get(j, 0) for j in grp.jobs))
             for grp in groups]
    return sorted(sized, key=lambda grp: (-grp.rows, sorted(grp.roots)))


def _row_counts(store: GraphStore, jobs: set[Job], values: str, filt: str) -> dict[Job, int]:
    out: dict[Job, int] = {}
    for kind, pattern in (("p", "?s ?x ?o"), ("c", f"?s <{_TYPE}> ?x")):
        iris = sorted(iri for k, iri in jobs if k == kind)
        if not iris:
            continue
        inner = " ".join(f"<{i}>" for i in iris)
        query = (f"SELECT ?x (COUNT(*) AS ?n) WHERE {{ VALUES ?x {{ {inner} }} {values} "
                 f"GRAPH ?g {{ {pattern} }} {filt} }} GROUP BY ?x")
        for sol in _select(store, query):
            x, n = sol[0], sol[1]
            assert isinstance(x, ox.NamedNode) and isinstance(n, ox.Literal)
            out[(kind, x.value)] = int(n.value)
    return out


# --- getting the triples out -----------------------------------------------------------


def _select(store: GraphStore, query: str) -> list[tuple[Any, ...]]:
    """Rows of a SELECT over explicit GRAPH patterns, read back from the store's TSV.

    Read whole here, into plain tuples of terms: a ``QuerySolutions`` is bound to the
    thread that made it (pyo3 ``unsendable``) and must not outlive this call. Kept in a
    caller's local, it lived on in that frame whenever the frame was kept alive — as it
    was in :func:`_plan`, whose frame the parser's reference cycles hold (the ``f_back``
    of rdflib's frames under :func:`shape_projection`) — until the garbage collector
    dropped it on whatever thread it ran on: pyo3 then leaked it and said so
    ("unsendable, but is being dropped on another thread")."""
    found = ox.parse_query_results(store.tsv(query), format=ox.QueryResultsFormat.TSV)
    assert isinstance(found, ox.QuerySolutions)
    width = len(found.variables)
    return [tuple(sol[i] for i in range(width)) for sol in found]


Fetch = Callable[[str], bytes]


def _graph_clause(graphs: Sequence[str] | None) -> tuple[str, str]:
    if graphs is None:  # every run graph: all named graphs but the meta graph
        return "", f"FILTER (?g != <{META_GRAPH}>)"
    return "VALUES ?g { " + " ".join(f"<{g}>" for g in graphs) + " }", ""


def _fetch(tsv: Fetch, job: Job, graphs: Sequence[str] | None) -> bytes:
    """The triples of one job as Turtle lines (N-Triples, but numbers bare)."""
    values, filt = _graph_clause(graphs)
    kind, iri = job
    if kind == "p":
        query = f"SELECT ?s ?o WHERE {{ {values} GRAPH ?g {{ ?s <{iri}> ?o }} {filt} }}"
        tail, sep = b" .\n", f" <{iri}> ".encode()
    else:
        query = f"SELECT ?s WHERE {{ {values} GRAPH ?g {{ ?s a <{iri}> }} {filt} }}"
        tail, sep = f" <{_TYPE}> <{iri}> .\n".encode(), b""
    text = tsv(query)
    # No DISTINCT (it costs ~20 %): a triple held by several run graphs comes once per
    # graph, and the parser makes a set of them. TSV writes terms in Turtle syntax
    # (numbers bare), a row a line, a tab between two terms; a tab or newline inside a
    # literal is escaped, and IRIs hold neither.
    body = text[text.index(b"\n") + 1:] if b"\n" in text else b""
    if sep:
        body = body.replace(b"\t", sep)
    return body.replace(b"\n", tail)


def _validate_group(tsv: Fetch, shapes: Shapes, group: _Group,
                    graphs: Sequence[str] | None) -> tuple[bool, list[ValidationReport]]:
    parts = {job: _fetch(tsv, job, graphs) for job in group.jobs}
    engine = _targeting(shapes, set(group.roots), set())
    if not group.rule8:
        text = b"".join(parts[job] for job in group.jobs).decode()
        return False, [engine.validate(text, format="turtle")]
    inputs = _rule8_inputs(parts[("p", _IDEM)], parts[("p", _EXECUTED)])
    return True, [engine.validate(text, format="turtle") for text in inputs]


_WORKER: dict[str, object] = {}


def _init_worker(path: str, shapes: Shapes, graphs: Sequence[str] | None) -> None:
    _WORKER.update(tsv=read_only_tsv(path), shapes=shapes, graphs=graphs)


def _worker_group(group: _Group) -> tuple[bool, list[ValidationReport]]:
    tsv, shapes, graphs = _WORKER["tsv"], _WORKER["shapes"], _WORKER["graphs"]
    assert callable(tsv) and isinstance(shapes, Shapes)
    return _validate_group(tsv, shapes, group, graphs)  # type: ignore[arg-type]


def _run(store: GraphStore, shapes: Shapes, groups: list[_Group],
         graphs: Sequence[str] | None, workers: int) -> list[tuple[bool, list[ValidationReport]]]:
    if workers <= 1 or len(groups) <= 1 or store.local_path is None:
        return [_validate_group(store.tsv, shapes, grp, graphs) for grp in groups]
    store.flush()  # the workers' read-only handles see what this one wrote
    # not fork: this process has native threads (RocksDB's, the journal's flusher) and a
    # child forked while one of them holds a lock waits on it forever (seen in tests). A
    # fork server is a clean process that imports this module once and forks the workers;
    # each opens a read-only handle of its own
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:
        ctx.set_forkserver_preload([__name__])
    with ctx.Pool(min(workers, len(groups)), initializer=_init_worker,
                  initargs=(str(store.local_path), shapes, graphs)) as pool:
        return list(pool.imap_unordered(_worker_group, groups, chunksize=1))

# --- rule 8 by key ---------------------------------------------------------------------


def _rule8_inputs(idem: bytes, executed: bytes) -> Iterator[str]:
    """Turtle texts of the actions that share a key with another, ``_RULE8_BUCKET`` keys'
    worth each, with their keys and execution times."""
    idem_sep, exec_sep = f" <{_IDEM}> ".encode(), f" <{_EXECUTED}> ".encode()
    holders: dict[bytes, set[bytes]] = {}
    lines: dict[bytes, list[bytes]] = {}
    for line in idem.splitlines(keepends=True):
        subject, key = line.split(idem_sep, 1)
        holders.setdefault(key, set()).add(subject)
        lines.setdefault(key, []).append(line)
    shared = [k for k, subjects in holders.items() if len(subjects) > 1]
    if not shared:
        return
    wanted = {s for k in shared for s in holders[k]}
    times: dict[bytes, list[bytes]] = {}
    for line in executed.splitlines(keepends=True):
        subject = line.split(exec_sep, 1)[0]
        if subject in wanted:
            times.setdefault(subject, []).append(line)
    for start in range(0, len(shared), _RULE8_BUCKET):
        out: list[bytes] = []
        done: set[bytes] = set()
        for key in shared[start:start + _RULE8_BUCKET]:
            out += lines[key]
            for subject in holders[key] - done:
                out += times.get(subject, [])
                done.add(subject)
        yield b"".join(out).decode()


# --- the report ------------------------------------------------------------------------

_SH = "http://www.w3.org/ns/shacl#"


def _merge_turtle(parts: list[tuple[str, bool]], conforms: bool) -> str:
    """One sh:ValidationReport holding the results of several; in the parts flagged
    (rule 8's key groups), a result already given (same focus, value, message) is left
    out, as the violations are."""
    if len(parts) == 1:
        return parts[0][0]
    report = ox.BlankNode()
    rtype, kind = ox.NamedNode(_TYPE), ox.NamedNode(f"{_SH}ValidationReport")
    result = ox.NamedNode(f"{_SH}result")
    out = [ox.Triple(report, rtype, kind),
           ox.Triple(report, ox.NamedNode(f"{_SH}conforms"), ox.Literal(
               "true" if conforms else "false",
               datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#boolean")))]
    seen: set[tuple[str, ...]] = set()
    same = [ox.NamedNode(f"{_SH}{p}") for p in ("focusNode", "value", "resultMessage")]
    for text, dedupe in parts:
        # blank node labels are each report's own (results, and shapes-graph nodes)
        triples = list(ox.parse(text, format=ox.RdfFormat.TURTLE, rename_blank_nodes=True))
        reports = {t.subject for t in triples if t.predicate == rtype and t.object == kind}
        dropped: set[object] = set()
        if dedupe:
            fields: dict[object, dict[object, str]] = {}
            for t in triples:
                if t.predicate in same:
                    fields.setdefault(t.subject, {})[t.predicate] = str(t.object)
            for node, values in sorted(fields.items(), key=lambda kv: str(kv[0])):
                ident = tuple(values.get(p, "") for p in same)
                if ident in seen:
                    dropped.add(node)
                seen.add(ident)
        for t in triples:
            if t.subject in dropped:
                continue
            if t.subject not in reports:
                out.append(t)
            elif t.predicate == result and t.object not in dropped:
                out.append(ox.Triple(report, result, t.object))
    data = ox.serialize(out, format=ox.RdfFormat.TURTLE,
                        prefixes={"sh": _SH, "cradle": CRADLE_NS})
    assert data is not None
    return data.decode()


def _combine(results: list[tuple[bool, list[ValidationReport]]]) -> ValidationReport:
    reports = [r for _, rs in results for r in rs]
    violations: list[Violation] = []
    seen: set[Violation] = set()
    for rule8, rs in results:
        for r in rs:
            for v in r.violations:
                if rule8:  # a pair of actions sharing two keys shows in two key groups
                    if v in seen:
                        continue
                    seen.add(v)
                violations.append(v)
    conforms = all(r.conforms for r in reports)
    turtle = _merge_turtle([(r.report_turtle, rule8) for rule8, rs in results for r in rs],
                           conforms)
    return ValidationReport(conforms=conforms, violations=sorted_violations(violations),
                            report_turtle=turtle)


# --- entry points ----------------------------------------------------------------------


#: below this many triples to fetch (a run, a small home) one process does it all
MIN_ROWS_FOR_WORKERS = 50_000


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def validate_store(store: GraphStore, shapes: Shapes, *, graphs: Sequence[str] | None = None,
                   workers: int | None = None) -> ValidationReport:
    """Validate the run graphs of ``store`` (all of them, or ``graphs``) against
    ``shapes``: the report :func:`validate_whole` gives, faster (module docstring)."""
    groups = _plan(store, shapes, graphs)
    count = default_workers() if workers is None else workers
    if sum(grp.rows for grp in groups) < MIN_ROWS_FOR_WORKERS:  # not worth processes
        count = 1
    return _combine(_run(store, shapes, groups, graphs, count))


def validate_whole(store: GraphStore, shapes: Shapes, *,
                   graphs: Sequence[str] | None = None) -> ValidationReport:
    """The reference: the canonical N-Quads of the run graphs and the shared graph in one
    validation."""
    chosen = store.data_graphs() if graphs is None else list(graphs)
    return RustShaclEngine(shapes).validate(store.nquads(graphs=chosen), format="nquads")
