"""The graph store behind one interface (:class:`GraphStore`): the journal's RDF projection.

Two implementations: :class:`~.oxigraph.OxigraphStore`, the embedded on-disk Oxigraph
store (``<home>/graph``, the default), and :class:`~.sparql_http.SparqlHttpStore`, any
store that speaks SPARQL 1.1 Query, SPARQL 1.1 Update and the Graph Store HTTP Protocol
(selected by ``"graph": URL`` in the home's ``config.json`` or ``CRADLE_GRAPH_URL``; see
:mod:`.graph_opening`).

A store knows nothing of the projection: it is handed SPARQL Update operations (``INSERT
DATA`` / ``DELETE DATA``, plain SPARQL 1.1) already made from the journal's events by
:mod:`cradle_kg.graph.catchup`, the one catch-up loop, and records how far it got.

# INVARIANT: the watermark (the last journal ``seq`` projected, in the meta graph) is
#   never ahead of the store's content: :meth:`GraphStore.apply` writes a batch's
#   operations and the new watermark in ONE update request (one transaction), so a crash
#   leaves the batch wholly in or wholly out — never a gap, never a duplicate (replayed
#   operations are set operations: replaying changes nothing).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import pyoxigraph as ox

from ..errors import GraphExportTooLargeError, GraphResponseError, GraphStoreError

META_GRAPH = "https://w3id.org/cradle/meta"
#: named graphs of packs' knowledge (ontology, reference data): ``…/pack/<id>/<version>/<name>``
KNOWLEDGE_BASE = "https://w3id.org/cradle/pack/"
#: the graph the projection's shared objects (policies, identities) live in
SHARED_GRAPH = "https://w3id.org/cradle/graph/shared"
_CRADLE = "https://w3id.org/cradle#"
DIGEST = f"{_CRADLE}knowledgeDigest"
SEQ = f"{_CRADLE}projectedSeq"
VERSION = f"{_CRADLE}projectionVersion"
#: the journal a store projects: the hash of its first event (tests/security/test_80)
JOURNAL = f"{_CRADLE}projectedJournal"
_INT = "http://www.w3.org/2001/XMLSchema#integer"
#: what :func:`meta_replace` deletes where there is no value (a triple never written)
_NONE = "urn:cradle:none"

#: the layout of the projection; a store written with another one is rebuilt on its next
#: catch-up (2: shared objects in the shared graph, not copied into each run graph; 3: the
#: `awaitsUse` and `awaitsVerification` flags the listing queries find by index; 4: the parts
#: of a proposal's, intent's and fact's key escaped before they are joined, test_386; a
#: fact the host wrote marked `hostStated`, test_388; 5: a refused proposal's action a node
#: of its own, test_468)
PROJECTION_VERSION = 5
#: the most N-Quads bytes an export reads in all (``export --max-bytes``): each graph's
#: answer of a remote store is bounded too, but the store lists the graphs (test_359)
MAX_EXPORT_BYTES = 1 << 30

Term = ox.NamedNode | ox.Literal
QueryResult = ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples
Progress = Callable[[int, int], None]


#: a watermark or a layout as the meta graph holds it: ASCII digits, a signed 64-bit value
META_NUMBER = re.compile(r"[0-9]{1,18}")


def meta_text(values: Collection[object], what: str) -> str | None:
    """The one literal the meta graph holds for ``what`` (None: none), whichever store
    holds it: several values, or one that is no literal, are refused (one
    :class:`~.errors.GraphResponseError` with the hint to rebuild). Before, the embedded
    store took the first of two in its own order (``tests/security/test_80``, ``test_445``)."""
    found = set(values)
    if not found:
        return None
    if len(found) > 1:
        raise GraphResponseError(
            f"the graph store holds {len(found)} values of its {what}: something else "
            "writes its meta graph",
            hint="one projector per store; `cradle-kg graph rebuild` writes it again")
    (value,) = found
    if not isinstance(value, ox.Literal):
        raise GraphResponseError(f"the graph store's {what} {str(value)[:60]!r} is no literal",
                                 hint="`cradle-kg graph rebuild` writes it again")
    return value.value


def meta_number(values: Collection[object], what: str) -> int | None:
    """:func:`meta_text`, a number: ASCII digits only (:data:`META_NUMBER`) — ``int()``
    read ``"٣"`` as 3, and ``"abc"`` ended the embedded store's every opening in
    ``unexpected ValueError`` (``tests/security/test_80``, ``test_445``)."""
    text = meta_text(values, what)
    if text is None:
        return None
    if not META_NUMBER.fullmatch(text):
        raise GraphResponseError(f"the graph store's {what} {text[:60]!r} is not a number",
                                 hint="`cradle-kg graph rebuild` writes it again")
    return int(text)


def meta_replace(values: Mapping[str, str], subject: str = META_GRAPH) -> str:
    """ONE SPARQL Update operation that replaces, in the meta graph, every value ``subject``
    has for each predicate of ``values`` by the term given (N-Triples) — whatever was
    there, none included.

    # INVARIANT: a value of the meta graph is replaced by one operation, never by a delete
    #   and an insert: Virtuoso applies a request's operations one by one, and a request
    #   stopped between them left neither value (tests/security/test_403).
    Every variable of the ``DELETE`` template is bound in every solution (an absent value
    is :data:`_NONE`, a triple no one writes): Virtuoso 7.2 drops a solution with an
    unbound one *whole* — its ``INSERT`` included, so a plain ``OPTIONAL`` inserted
    nothing into an empty meta graph."""
    meta, node = f"<{META_GRAPH}>", f"<{subject}>"
    predicates = " ".join(f"<{p}>" for p in values)
    new = " . ".join(f"{node} <{p}> {term}" for p, term in values.items())
    return (f"DELETE {{ GRAPH {meta} {{ {node} ?p ?old }} }} "
            f"INSERT {{ GRAPH {meta} {{ {new} }} }} "
            f"WHERE {{ VALUES ?p {{ {predicates} }} "
            f"OPTIONAL {{ GRAPH {meta} {{ {node} ?p ?found }} }} "
            f"BIND(COALESCE(?found, <{_NONE}>) AS ?old) }}")


def _integer(n: int) -> str:
    return f"\"{n}\"^^<{_INT}>"


def rebuilding_mark() -> str:
    """The operation a rebuild starts with, before it drops anything: the layout set to 0
    (no layout this code writes), the watermark kept. A rebuild stopped anywhere before
    its last write (:func:`watermark_update`) leaves a store that reads as written with
    another layout, so the next catch-up rebuilds it whole — never the old watermark over
    graphs the rebuild had dropped (tests/security/test_404)."""
    return meta_replace({VERSION: _integer(0)})


def watermark_update(seq: int) -> str:
    """The SPARQL Update that moves the watermark to ``seq`` and records the layout: ONE
    operation (:func:`meta_replace`), whatever the meta graph held."""
    return meta_replace({SEQ: _integer(seq), VERSION: _integer(PROJECTION_VERSION)})


def _watermark_insert(seq: int) -> str:
    """``INSERT DATA`` of the watermark at ``seq`` and of this code's layout."""
    meta = f"<{META_GRAPH}>"
    return (f"INSERT DATA {{ GRAPH {meta} {{ {meta} <{SEQ}> \"{seq}\"^^<{_INT}> . "
            f"{meta} <{VERSION}> \"{PROJECTION_VERSION}\"^^<{_INT}> }} }}")


def watermark_triples(seq: int) -> tuple[str, ...]:
    """The watermark and layout triples :func:`_watermark_insert` writes (N-Triples, in
    the form the store gives them back)."""
    meta = f"<{META_GRAPH}>"
    return (f"{meta} <{SEQ}> \"{seq}\"^^<{_INT}>",
            f"{meta} <{VERSION}> \"{PROJECTION_VERSION}\"^^<{_INT}>")


def watermark_data(current: Iterable[str], seq: int) -> str:
    """The watermark move to ``seq`` as data operations only: ``DELETE DATA`` of the
    ``current`` watermark and layout triples (N-Triples, as the store holds them) and
    ``INSERT DATA`` of the new ones — for a store whose one writer has just read them.

    # INVARIANT: no pattern operation (``DELETE WHERE``) in a batch's update: on
    #   Oxigraph one makes the whole update a read-write transaction, which doubled the
    #   cost of writing a batch (see the README, *Where the projector's lag went*)."""
    old = " . ".join(current)
    drop = f"DELETE DATA {{ GRAPH <{META_GRAPH}> {{ {old} }} }} ;\n" if old else ""
    return drop + _watermark_insert(seq)


def _data_ops(verb: str, by_graph: dict[str, dict[str, None]], max_bytes: int) -> list[str]:
    """``verb`` (``INSERT DATA`` / ``DELETE DATA``) operations of triples grouped by graph,
    each at most about ``max_bytes`` long."""
    ops: list[str] = []
    body: list[str] = []
    size = 0
    for g, grouped in by_graph.items():
        triples = list(grouped)
        for start in range(0, len(triples), 1000):
            part = f"GRAPH {g} {{ {' . '.join(triples[start:start + 1000])} }}"
            if body and size + len(part) > max_bytes:
                ops.append(f"{verb} {{ {' '.join(body)} }}")
                body, size = [], 0
            body.append(part)
            size += len(part) + 1
    if body:
        ops.append(f"{verb} {{ {' '.join(body)} }}")
    return ops


class QuadBatch:
    """What a batch of projected events changes, as its net effect in journal order:
    ``(graph, "s p o")`` pairs to add and to remove (``graph`` an ``<IRI>``). A triple
    added then retracted in one batch is only removed, retracted then added only added,
    so the two sets are disjoint and a store may apply them in either order, in one
    transaction or several (replaying either changes nothing). Kept grouped by graph, in
    the order the graphs and triples came."""

    __slots__ = ("_added", "_removed")

    def __init__(self) -> None:
        self._added: dict[str, dict[str, None]] = {}
        self._removed: dict[str, dict[str, None]] = {}

    @staticmethod
    def _put(into: dict[str, dict[str, None]], out: dict[str, dict[str, None]],
             graph: str, triples: Iterable[str]) -> None:
        new = dict.fromkeys(triples)
        if not new:
            return
        gone = out.get(graph)
        if gone:  # rare: a retraction and an addition of one triple in a batch
            for t in new:
                gone.pop(t, None)
        mine = into.get(graph)
        if mine is None:
            into[graph] = new
        else:
            mine.update(new)

    def add(self, graph: str, triples: Iterable[str]) -> None:
        self._put(self._added, self._removed, graph, triples)

    def remove(self, graph: str, triples: Iterable[str]) -> None:
        self._put(self._removed, self._added, graph, triples)

    @property
    def added(self) -> list[tuple[str, str]]:
        return [(g, t) for g, triples in self._added.items() for t in triples]

    @property
    def removed(self) -> list[tuple[str, str]]:
        return [(g, t) for g, triples in self._removed.items() for t in triples]

    def __len__(self) -> int:
        return (sum(map(len, self._added.values()))
                + sum(map(len, self._removed.values())))

    @staticmethod
    def nquads(pairs: Iterable[tuple[str, str]]) -> str:
        return "".join([f"{t} {g} .\n" for g, t in pairs])

    def all_nquads(self) -> str:
        """Both sets as N-Quads text (for the check that they are N-Quads)."""
        return "".join([f"{t} {g} .\n" for by_graph in (self._added, self._removed)
                        for g, triples in by_graph.items() for t in triples])

    @staticmethod
    def data(verb: str, pairs: Iterable[tuple[str, str]], max_bytes: int) -> list[str]:
        """``INSERT DATA`` / ``DELETE DATA`` operations (``verb``) of ``pairs``, grouped by
        graph, each at most about ``max_bytes`` long."""
        by_graph: dict[str, dict[str, None]] = {}
        for g, t in pairs:
            by_graph.setdefault(g, {})[t] = None
        return _data_ops(verb, by_graph, max_bytes)

    def sparql_deletes(self, max_bytes: int = 1 << 62) -> list[str]:
        return _data_ops("DELETE DATA", self._removed, max_bytes)

    def sparql(self, max_bytes: int = 1 << 62) -> list[str]:
        """The batch as SPARQL 1.1 Update operations: its deletions, then its insertions."""
        return (_data_ops("DELETE DATA", self._removed, max_bytes)
                + _data_ops("INSERT DATA", self._added, max_bytes))


def is_knowledge(graph: str) -> bool:
    return graph.startswith(KNOWLEDGE_BASE)


def check_knowledge_name(graph: str) -> None:
    if not is_knowledge(graph):
        raise GraphStoreError(f"`{graph}` is not a knowledge graph name")


def split_graphs(names: Iterable[str]) -> tuple[list[str], list[str], list[str]]:
    """(run graphs, data graphs, knowledge graphs) among a store's graph names."""
    every = sorted(set(names) - {META_GRAPH})
    knowledge = [g for g in every if is_knowledge(g)]
    data = [g for g in every if not is_knowledge(g)]
    return [g for g in data if g != SHARED_GRAPH], data, knowledge


class ProjectionTarget(Protocol):
    """What the catch-up loop writes to (a :class:`GraphStore`, or the server's private
    store, which keeps its watermark in memory)."""

    def projected_seq(self) -> int:
        """The watermark: the last journal ``seq`` whose projection is in the store."""
        ...

    def layout(self) -> int:
        """The projection layout the store was written with (1: before it was recorded)."""
        ...

    def apply(self, batch: QuadBatch, seq: int) -> None:
        """One batch of projected events: its net additions and retractions, then the
        watermark ``seq`` — never ahead of the content (a kill part-way leaves the
        watermark behind, and the batch is applied again)."""
        ...

    def replace_all(self, nquads: Iterable[str], retractions: Sequence[str],
                    watermark: Callable[[], int]) -> None:
        """Rebuild: mark the store as being rebuilt (:func:`rebuilding_mark`), drop the
        projection (run, shared and meta graphs; the packs' knowledge stays), load
        ``nquads`` (chunks of N-Quads text), then delete ``retractions`` (``GRAPH <g> { s p
        o }`` patterns, complete once ``nquads`` is consumed) and write the watermark
        ``watermark()`` last."""
        ...


@runtime_checkable
class FlushesInBackground(Protocol):
    """A store whose writer can leave its housekeeping flushes to a thread of their own
    (the embedded store: :meth:`~.oxigraph.OxigraphStore.flush_in_background`), for a
    long-lived writer that must not stall behind one (the projector)."""

    def flush_in_background(self) -> None:
        ...


@runtime_checkable
class JournalBound(Protocol):
    """A store that records which journal it projects (the home's stores; the server's
    private store projects only the journal it was built from)."""

    def journal_identity(self) -> str | None:
        """The hash of the first event of the journal the store projects (None: not
        recorded — empty, or written before it was)."""
        ...

    def bind_journal(self, identity: str) -> None:
        """Record ``identity`` as the journal the store projects."""
        ...


@runtime_checkable
class GraphStore(ProjectionTarget, Protocol):
    """What the runtime, the CLI and the server ask of a graph store."""

    #: an on-disk Oxigraph folder other processes may open read-only (validate's
    #: workers), or None (in memory, remote)
    local_path: Path | None

    def describe(self) -> str:
        """Where the store is, for messages (a path, or a URL without credentials)."""
        ...

    def query(self, text: str, *, bound: Mapping[str, Term] | None = None,
              union: bool = True, default_graph: Sequence[str] | None = None,
              named_graphs: Sequence[str] | None = None,
              base_iri: str | None = None) -> QueryResult:
        """Run a query (already checked by :func:`cradle_kg.graph.queries.execute`) with
        ``bound`` variables replaced by RDF terms (never spliced as text). The dataset:
        ``default_graph`` / ``named_graphs`` when given; else the query's own; else
        (``union``) the union of all graphs as the default graph."""
        ...

    def tsv(self, select: str) -> bytes:
        """A SELECT (over explicit ``GRAPH`` patterns) as SPARQL TSV results."""
        ...

    def ask(self, query: str) -> bool:
        ...

    def graph_names(self) -> list[str]:
        """Every named graph in the store (meta graph included)."""
        ...

    def run_graphs(self) -> list[str]:
        ...

    def data_graphs(self) -> list[str]:
        ...

    def knowledge_graphs(self) -> list[str]:
        ...

    def knowledge_digest(self, graph: str) -> str | None:
        ...

    def install_knowledge(self, graph: str, digest: str, data: str, *,
                          turtle: bool = False) -> None:
        """Replace ``graph`` with ``data`` (N-Triples, or Turtle), then record ``digest``
        (the marker last: an interrupted install is redone on the next open)."""
        ...

    def nquads(self, *, graphs: Iterable[str] | None = None,
               max_bytes: int = MAX_EXPORT_BYTES) -> str:
        """Canonical N-Quads, sorted: the data graphs (or ``graphs``), meta graph left out;
        :class:`GraphExportTooLargeError` past ``max_bytes`` read (test_359)."""
        ...

    def flush(self) -> None:
        """Make what was written visible to other readers (durable on disk)."""
        ...

    def close(self) -> None:
        ...


__all__ = [
    "KNOWLEDGE_BASE",
    "MAX_EXPORT_BYTES",
    "META_GRAPH",
    "META_NUMBER",
    "PROJECTION_VERSION",
    "SHARED_GRAPH",
    "FlushesInBackground",
    "GraphStore",
    "JournalBound",
    "Progress",
    "ProjectionTarget",
    "QuadBatch",
    "QueryResult",
    "Term",
    "check_knowledge_name",
    "export_too_large",
    "is_knowledge",
    "meta_number",
    "meta_replace",
    "meta_text",
    "rebuilding_mark",
    "split_graphs",
    "watermark_data",
    "watermark_triples",
    "watermark_update",
]


def export_too_large(max_bytes: int) -> GraphExportTooLargeError:
    """The error of an export past ``max_bytes`` read in all."""
    return GraphExportTooLargeError(
        f"the export is larger than {max_bytes} bytes of N-Quads in all; nothing written",
        hint="export one run's graph (`--run`), or raise the bound with `--max-bytes`")
