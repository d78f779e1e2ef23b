"""SHACL validation of run graphs behind one interface, two engines.

- ``RustShaclEngine`` (the ``shacl`` package): the default. Shapes are compiled once
  and reused; data goes in as N-Triples/N-Quads text, which is what the Rust parser
  reads fastest and what a pyoxigraph store dumps for free.
- ``PyShaclEngine`` (pySHACL): the reference oracle, used by the differential tests.
  It is always given an rdflib graph: over a pyoxigraph-backed graph it misreads
  literals.

The data graph is the union of all named graphs (a run graph is one named graph; a
store dump is many). Non-conformance is a report, never an exception; exceptions are
for shapes or data that cannot be read at all.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

import pyoxigraph as ox
import shacl as rust_shacl
from pydantic import BaseModel, ConfigDict

from cradle_kg.errors import CradleError, RdfParseError, ShapesError
from cradle_kg.graph.vocab import (
    CRADLE_NS,
    INTEGRITY_SHAPES_FILE,
    RDF_NS,
    RULE_NUMBER,
    SH_NS,
    STRUCTURE_SHAPES_FILE,
    XSD_NS,
)

if TYPE_CHECKING:  # rdflib is imported where a graph is read or built: not to compile
    from rdflib import Graph  # a contract's shapes (``tools list``, tool registration)
    from rdflib.term import Node

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "PyShaclEngine",
    "RustShaclEngine",
    "ShaclEngine",
    "Shapes",
    "ValidationReport",
    "Violation",
    "default_engine",
    "load_shapes",
    "make_engine",
    "shapes_from_turtle",
    "union_graph",
    "validate",
]

#: chosen by bench/bench_shacl.py: the Rust engine is two orders of magnitude faster
DEFAULT_ENGINE: Final = "rust"

DataInput: TypeAlias = "Graph | str"  # an rdflib Graph / Dataset, or N-Triples / N-Quads text


class Violation(BaseModel):
    """One SHACL result, named by its integrity rule (``None`` for structural shapes)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    rule: int | None
    focus_node: str  # IRI without <>, or _:label for a blank node
    shape: str  # the nearest named shape (IRI), not a nested blank property shape
    path: str | None
    message: str
    severity: str  # Violation | Warning | Info


class ValidationReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    conforms: bool
    violations: list[Violation]
    report_turtle: str

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "conforms": self.conforms,
            "violations": [v.model_dump() for v in self.violations],
        }

    def to_turtle(self) -> str:
        """The standard SHACL validation report (sh:ValidationReport) as Turtle."""
        return self.report_turtle

    def rules(self) -> set[int]:
        """The integrity rules violated."""
        return {v.rule for v in self.violations if v.rule is not None}

    def to_text(self) -> str:
        if self.conforms and not self.violations:
            return "conforms: no violations"
        head = "conforms" if self.conforms else "does not conform"
        lines = [f"{head}: {len(self.violations)} result(s)"]
        groups: dict[int | None, list[Violation]] = {}
        for v in self.violations:
            groups.setdefault(v.rule, []).append(v)
        for rule in sorted(groups, key=lambda r: (r is None, r or 0)):
            lines.append(f"rule {rule}:" if rule is not None else "structure:")
            for v in groups[rule]:
                where = f" (path {v.path})" if v.path else ""
                lines.append(f"  [{v.severity}] {v.focus_node}{where}: {v.message}")
                lines.append(f"      shape {v.shape}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Shapes:
    """A loaded shapes graph: built-in shapes plus any extra (pack) shape files.

    ``ntriples`` is what the Rust engine compiles; the rdflib ``graph`` (pySHACL and the
    bulk planner read it) is the one the files were read into, or parsed from
    ``ntriples`` on first use — a contract's shapes are read by pyoxigraph, so compiling
    them needs no rdflib."""

    ntriples: str
    rule_numbers: Mapping[str, int]
    files: tuple[Path, ...] = ()
    read_into: Graph | None = field(default=None, repr=False)

    @cached_property
    def graph(self) -> Graph:
        if self.read_into is not None:
            return self.read_into
        from rdflib import Graph

        graph = Graph()
        graph.parse(data=self.ntriples, format="nt")
        return graph

    @cached_property
    def parents(self) -> Mapping[Node, Node]:
        """Blank shape -> the shape that holds it, to name a nested result by its root."""
        return _shape_parents(self.graph)


#: shapes already read in this process, by their files' paths and contents (see
#: :func:`load_shapes`); at most :data:`_READ_LIMIT`, the oldest dropped first
_READ: OrderedDict[tuple[tuple[str, str], ...], Shapes] = OrderedDict()
_READ_LIMIT: Final = 32
_READ_LOCK = Lock()


def _contents_key(files: Sequence[Path]) -> tuple[tuple[str, str], ...] | None:
    """Each file's resolved path (its base IRI) and the sha256 of its bytes; None when one
    cannot be read (the parse then says why). Read as the parse reads it: a regular file,
    bounded (a FIFO named as a pack's shapes hung every open of the home here, before
    the parse could refuse it: ``tests/security/test_277``)."""
    from cradle_kg.inputs import FILE_LIMITS, read_file

    try:
        return tuple((str(f.resolve()), hashlib.sha256(
            read_file(f, max_bytes=FILE_LIMITS.max_bytes)).hexdigest()) for f in files)
    except (OSError, CradleError):
        return None


def load_shapes(extra: Iterable[str | Path] = (), *, builtin: bool = True) -> Shapes:
    """Read shape files into one shapes graph; ``ShapesError`` names the bad file.

    Files read before in this process with the same bytes at the same place are not parsed
    again (every runtime reads the integrity rules and its packs' shapes: ~20 ms each time
    with rdflib): the shapes are made from the N-Triples kept then, and each caller gets a
    :class:`Shapes` of its own (its rdflib graph, if asked for, parsed from them). A file
    changed in place has other bytes, so it is read again; a file that does not parse is
    never kept."""
    files = [INTEGRITY_SHAPES_FILE, STRUCTURE_SHAPES_FILE] if builtin else []
    files += [Path(p) for p in extra]
    key = _contents_key(files)
    if key is not None:
        with _READ_LOCK:
            kept = _READ.get(key)
            if kept is not None:
                _READ.move_to_end(key)
                return Shapes(ntriples=kept.ntriples, rule_numbers=dict(kept.rule_numbers),
                              files=tuple(files))
    ntriples, graph = _read_files(files)
    _refuse_core_terms(files)
    names = ", ".join(f"`{p}`" for p in files) or "(no files)"
    rules = _rule_numbers(ox.parse(ntriples, format=ox.RdfFormat.N_TRIPLES), f" in {names}")
    if key is not None:
        with _READ_LOCK:
            _READ[key] = Shapes(ntriples=ntriples, rule_numbers=dict(rules))
            while len(_READ) > _READ_LIMIT:
                _READ.popitem(last=False)
    return Shapes(ntriples=ntriples, rule_numbers=rules, files=tuple(files), read_into=graph)


def _refuse_core_terms(files: Sequence[Path]) -> None:
    """A file read beside the built-in shapes states nothing about a term of the core
    vocabulary (a subject in :data:`CRADLE_NS`, ``cradle:`` itself included), or a
    :class:`ShapesError` naming the file and the term.

    INVARIANT: a pack's (or ``--shapes``') shapes add shapes of their own, they never
    change the integrity rules: merged into one shapes graph, ``cradle:Rule1Shape
    sh:deactivated true`` switched rule 1 off, and a second ``cradle`` prefix declared on
    ``cradle:`` (another namespace) made rules 2, 7 and 8 read nothing on the Rust engine —
    at the commit check and in ``validate --pack``, ``pack validate`` saying valid
    (``tests/security/test_467``). Shapes read without the built-in ones (a tool's
    postconditions, a rewritten copy of the rules) are a shapes graph of their own."""
    core = {INTEGRITY_SHAPES_FILE.resolve(), STRUCTURE_SHAPES_FILE.resolve()}
    if not any(f.resolve() in core for f in files):
        return
    for path in files:
        if path.resolve() in core:
            continue
        term = next((s for s in _subjects(path) if s.startswith(CRADLE_NS)), None)
        if term is not None:
            raise ShapesError(
                f"cannot load shapes: `{path}` states something about `{term}`, a term of "
                f"the core vocabulary (`{CRADLE_NS}`): shapes read with the integrity rules "
                "add shapes of their own and never change the core's",
                hint="name your shapes and declare your prefixes on nodes of your own "
                     "namespace")


def _subjects(path: Path) -> Iterator[str]:
    """The IRIs ``path`` states something about (a file :func:`_read_files` has read)."""
    from cradle_kg.inputs import FILE_LIMITS, read_text_file

    fmt = _OX_FORMATS.get(path.suffix.lower())
    if fmt is not None:
        try:
            text = read_text_file(path, max_bytes=FILE_LIMITS.max_bytes)
            quads = list(ox.parse(text, format=fmt, base_iri=path.resolve().as_uri()))
        except (SyntaxError, ValueError, OSError, CradleError):
            pass  # read by rdflib, as _read_files read it
        else:
            yield from (q.subject.value for q in quads if isinstance(q.subject, ox.NamedNode))
            return
    from rdflib import URIRef

    from cradle_kg.graph.rdfio import read_union

    try:
        graph = read_union([path])
    except RdfParseError as exc:
        raise ShapesError(f"cannot load shapes: {exc.message}", hint=exc.hint) from exc
    yield from (str(s) for s in graph.subjects() if isinstance(s, URIRef))


#: the file extensions :func:`_read_files` has pyoxigraph read (``rdfio``'s for these
#: formats; importing ``rdfio`` imports rdflib)
_OX_FORMATS: Final = {".ttl": ox.RdfFormat.TURTLE, ".turtle": ox.RdfFormat.TURTLE,
                      ".trig": ox.RdfFormat.TRIG, ".nt": ox.RdfFormat.N_TRIPLES,
                      ".nq": ox.RdfFormat.N_QUADS}


def _read_files(files: Sequence[Path]) -> tuple[str, Graph | None]:
    """The N-Triples of the files' union (named graphs merged, each file's blank nodes its
    own), and the rdflib graph they were read into, if they were.

    Files in the Turtle family are read by pyoxigraph: a runtime's start then imports no
    rdflib (~65 ms of CPU with its parse; the Rust engine reads N-Triples). Anything else
    — JSON-LD, a file pyoxigraph refuses, one it cannot read — goes to rdflib, which reads
    them all and names the file and line of what is wrong, as before."""
    from cradle_kg.inputs import FILE_LIMITS, read_text_file

    try:
        seen: dict[ox.Triple, None] = {}
        for path in files:
            fmt = _OX_FORMATS[path.suffix.lower()]
            # rdfio's MAX_RDF_FILE_BYTES: a larger file goes to rdflib, which refuses it
            text = read_text_file(path, max_bytes=FILE_LIMITS.max_bytes)
            for quad in ox.parse(text, format=fmt, base_iri=path.resolve().as_uri(),
                                 rename_blank_nodes=True):
                seen.setdefault(quad.triple)
        data = ox.serialize(list(seen), format=ox.RdfFormat.N_TRIPLES) or b""
        return data.decode("utf-8"), None
    except (KeyError, SyntaxError, ValueError, OSError, CradleError):
        pass  # rdflib says what is wrong
    from cradle_kg.graph.rdfio import read_union

    try:
        graph = read_union(files)
    except RdfParseError as exc:
        raise ShapesError(f"cannot load shapes: {exc.message}", hint=exc.hint) from exc
    return to_ntriples(graph), graph


def shapes_from_turtle(texts: Iterable[str]) -> Shapes:
    """Shapes given as Turtle text (a tool contract's postconditions), read by pyoxigraph;
    a text that does not parse or declares no shape is a :class:`ShapesError`."""
    triples: list[ox.Triple] = []
    try:
        for text in texts:  # each text's blank nodes its own, as rdflib's parser has them
            triples += [q.triple for q in ox.parse(text, format=ox.RdfFormat.TURTLE,
                                                   rename_blank_nodes=True)]
    except (SyntaxError, ValueError) as exc:
        raise ShapesError(f"cannot read shapes: {exc}") from exc
    rules = _rule_numbers(triples, "")
    ntriples = (ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES) or b"").decode("utf-8")
    return Shapes(ntriples=ntriples, rule_numbers=rules)


_TYPE: Final = ox.NamedNode(RDF_NS + "type")
_SHAPE_KINDS: Final = frozenset({ox.NamedNode(SH_NS + "NodeShape"),
                                 ox.NamedNode(SH_NS + "PropertyShape")})
_RULE: Final = ox.NamedNode(RULE_NUMBER)
#: the XSD datatypes whose values are integers (rdflib's ``toPython`` gives an ``int``)
_INTEGER_TYPES: Final = frozenset(ox.NamedNode(XSD_NS + t) for t in (
    "integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
    "nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort",
    "unsignedByte"))
_INTEGER: Final = re.compile(r"[+-]?[0-9]+")


def _rule_numbers(triples: Iterable[ox.Triple], where: str) -> dict[str, int]:
    """The shapes' ``cradle:ruleNumber`` s; no shape declared (``where``: in which files)
    or a rule number that is not an integer is a :class:`ShapesError`."""
    out: dict[str, int] = {}
    declares = False
    for t in triples:
        if t.predicate == _TYPE and t.object in _SHAPE_KINDS:
            declares = True
        elif t.predicate == _RULE:
            number = t.object
            if not (isinstance(number, ox.Literal) and number.datatype in _INTEGER_TYPES
                    and _INTEGER.fullmatch(number.value)):
                raise ShapesError(f"`cradle:ruleNumber` of `{_show(t.subject)}` is not an "
                                  f"integer: `{_show(number)}`")
            out[_show(t.subject)] = int(number.value)
    if not declares:
        raise ShapesError(f"no shapes declared{where}")
    return out


def _show(term: object) -> str:
    """A pyoxigraph term as rdflib's ``str`` shows it: an IRI, a label, a lexical form."""
    value = getattr(term, "value", None)
    return value if isinstance(value, str) else str(term)


def _shape_parents(graph: Graph) -> dict[Node, Node]:
    from rdflib.collection import Collection

    from cradle_kg.graph.vocab import SH

    parents: dict[Node, Node] = {}
    for pred in (SH.property, SH.node, SH["not"], SH.qualifiedValueShape):
        for holder, child in graph.subject_objects(pred):
            parents.setdefault(child, holder)
    for pred in (SH["or"], SH["and"], SH.xone):
        for holder, head in graph.subject_objects(pred):
            for member in Collection(graph, head):
                parents.setdefault(member, holder)
    return parents


def _root_shape(shapes: Shapes, node: Node) -> Node:
    from rdflib import BNode

    seen: set[Node] = set()
    while isinstance(node, BNode) and node in shapes.parents and node not in seen:
        seen.add(node)
        node = shapes.parents[node]
    return node


def to_ntriples(graph: Graph) -> str:
    # _nt_row is rdflib's own N-Triples line writer (escaping included); calling it
    # directly skips the serializer plugin machinery, which costs more than the rows
    # A ConjunctiveGraph/Dataset asked for context=None answers from the union of its
    # graphs, each triple once: that is the union graph, without copying it.
    from rdflib.graph import ConjunctiveGraph
    from rdflib.plugins.serializers.nt import _nt_row

    if isinstance(graph, ConjunctiveGraph):
        rows = (_nt_row(t) for t, _ in graph.store.triples((None, None, None), context=None))
    else:
        rows = (_nt_row(t) for t in graph.triples((None, None, None)))
    return "".join(rows)


def union_graph(data: DataInput, *, format: str | None = None) -> Graph:
    """An rdflib Graph holding the union of every graph of ``data``."""
    from rdflib import Graph
    from rdflib.graph import ConjunctiveGraph

    from cradle_kg.graph.rdfio import read_rdf

    if isinstance(data, str):
        data = read_rdf(data, format or "nquads")
    if not isinstance(data, ConjunctiveGraph):
        return data
    merged = Graph()
    for s, p, o, _ in data.quads((None, None, None, None)):
        merged.add((s, p, o))
    return merged


def _term(nt: str) -> str:
    """An N-Triples term as a report shows it: IRIs without <>."""
    return nt[1:-1] if nt.startswith("<") and nt.endswith(">") else nt


class ShaclEngine(Protocol):
    name: str
    shapes: Shapes

    def validate(self, data: DataInput, *, format: str | None = None,
                 report: bool = True) -> ValidationReport:
        """``report=False``: leave ``report_turtle`` empty (the violations are all a commit
        check reads; rendering the report costs a tenth of a millisecond per call)."""
        ...


def sorted_violations(violations: list[Violation]) -> list[Violation]:
    return sorted(
        violations,
        key=lambda v: (v.rule is None, v.rule or 0, v.focus_node, v.shape, v.message),
    )


# formats the Rust parser reads itself; anything else goes through rdflib first
_RUST_FORMATS: Final = {"nt": "ntriples", "nquads": "nquads", "turtle": "turtle", "trig": "trig"}
_LINE: Final = re.compile(r"line (\d+)")


class RustShaclEngine:
    """The ``shacl`` package: shapes compiled once, data validated as text."""

    name = "rust"

    def __init__(self, shapes: Shapes) -> None:
        self.shapes = shapes
        try:
            self._compiled = rust_shacl.Shapes.from_text(shapes.ntriples, format="ntriples")
        except ValueError as exc:
            raise ShapesError(f"cannot compile shapes: {exc}") from exc

    def validate(self, data: DataInput, *, format: str | None = None,
                 report: bool = True) -> ValidationReport:
        from cradle_kg.graph.rdfio import FORMATS

        fmt = FORMATS.get((format or "nquads").lower(), format or "")
        if isinstance(data, str) and fmt in _RUST_FORMATS:
            text, rust_fmt = data, _RUST_FORMATS[fmt]
        else:
            from cradle_kg.graph.rdfio import read_rdf

            graph = data if not isinstance(data, str) else read_rdf(data, format)
            text, rust_fmt = to_ntriples(graph), "ntriples"
        try:
            result = self._compiled.validate_text(text, format=rust_fmt)
        except ValueError as exc:
            match = _LINE.search(str(exc))
            raise RdfParseError(
                f"data does not parse: {exc}", line=int(match.group(1)) if match else None
            ) from exc
        violations = [self._violation(r) for r in result.results]
        return ValidationReport(
            conforms=result.conforms, violations=sorted_violations(violations),
            report_turtle=result.turtle if report else "",
        )

    def _violation(self, r: rust_shacl.Result) -> Violation:
        shape = _term(r.root_shape or r.source_shape or "")
        return Violation(
            rule=self.shapes.rule_numbers.get(shape),
            focus_node=_term(r.focus_node),
            shape=shape,
            path=_term(r.path) if r.path else None,
            message=r.message or f"{r.component} not satisfied",
            severity=r.severity,
        )


class PyShaclEngine:
    """pySHACL, the reference: slow, but the oracle the Rust engine is checked against."""

    name = "pyshacl"

    def __init__(self, shapes: Shapes) -> None:
        self.shapes = shapes
        # pySHACL reads shapes lazily; validate an empty graph now so that bad shapes
        # fail at load time, like the Rust engine, not at the first run's commit
        from rdflib import Graph

        self.validate(Graph())

    def validate(self, data: DataInput, *, format: str | None = None,
                 report: bool = True) -> ValidationReport:
        import pyshacl  # only this engine needs it (seconds of import): not at start-up
        from rdflib import RDF

        from cradle_kg.graph.vocab import SH

        graph = union_graph(data, format=format)
        try:
            conforms, results, _ = pyshacl.validate(
                graph, shacl_graph=self.shapes.graph, inference="none", inplace=True
            )
        except Exception as exc:  # ShapeLoadError, ConstraintLoadError, ReportableRuntimeError
            raise ShapesError(f"pyshacl cannot use the shapes: {exc}") from exc
        # only the report's own sh:result: pySHACL also types the nested sh:detail
        # results of sh:node as sh:ValidationResult, which the Rust engine omits
        violations = [
            self._violation(results, node)
            for found in results.subjects(RDF.type, SH.ValidationReport)
            for node in results.objects(found, SH.result)
        ]
        return ValidationReport(
            conforms=bool(conforms),
            violations=sorted_violations(violations),
            report_turtle=results.serialize(format="turtle") if report else "",
        )

    def _violation(self, results: Graph, node: Node) -> Violation:
        from cradle_kg.graph.vocab import SH

        source = results.value(node, SH.sourceShape)
        root = _root_shape(self.shapes, source) if source is not None else None
        shape = _node_str(root) if root is not None else ""
        severity = results.value(node, SH.resultSeverity)
        message = results.value(node, SH.resultMessage)
        component = results.value(node, SH.sourceConstraintComponent)
        return Violation(
            rule=self.shapes.rule_numbers.get(shape),
            focus_node=_node_str(results.value(node, SH.focusNode)),
            shape=shape,
            path=_path_str(results, results.value(node, SH.resultPath)),
            message=str(message) if message is not None else f"{component} not satisfied",
            severity=str(severity).rsplit("#", 1)[-1] if severity is not None else "Violation",
        )


def _node_str(node: Node | None) -> str:
    from rdflib import BNode

    if isinstance(node, BNode):
        return f"_:{node}"
    return str(node) if node is not None else ""


def _path_str(graph: Graph, path: Node | None) -> str | None:
    # the Rust engine renders paths in SPARQL syntax; match it for the simple cases
    from rdflib import URIRef

    from cradle_kg.graph.vocab import SH

    if path is None:
        return None
    if isinstance(path, URIRef):
        return str(path)
    inverse = graph.value(path, SH.inversePath)
    if isinstance(inverse, URIRef):
        return f"^<{inverse}>"
    return _node_str(path)


ENGINES: Final[dict[str, type[RustShaclEngine] | type[PyShaclEngine]]] = {
    "rust": RustShaclEngine,
    "pyshacl": PyShaclEngine,
}


def make_engine(name: str, shapes: Shapes) -> ShaclEngine:
    try:
        return ENGINES[name](shapes)
    except KeyError:
        raise ShapesError(
            f"unknown SHACL engine `{name}`", hint=f"one of: {', '.join(ENGINES)}"
        ) from None


@lru_cache(maxsize=len(ENGINES))
def default_engine(name: str = DEFAULT_ENGINE) -> ShaclEngine:
    """An engine over the built-in shapes, built once per process."""
    return make_engine(name, load_shapes())


def validate(
    data: DataInput,
    *,
    engine: ShaclEngine | str | None = None,
    format: str | None = None,
) -> ValidationReport:
    """Validate ``data`` (a Graph/Dataset, or N-Triples/N-Quads text by default)."""
    if engine is None or isinstance(engine, str):
        engine = default_engine(engine or DEFAULT_ENGINE)
    return engine.validate(data, format=format)
