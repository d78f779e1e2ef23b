"""``graph verify``: does the graph store hold the projection of the journal, and nothing else?

``audit verify`` checks the journal; nothing checked that the store an auditor queries
is its projection: a store edited through its files or a remote store's update
endpoint, or a projection that merged two objects into one node, read as intact.

How. The journal, up to the store's watermark, is projected by :func:`~.catchup.rebuild`
(the runtime's own projection code, the home's packs' hooks) into a scratch on-disk store
in a temporary folder, with the home's packs' knowledge graphs installed as ``graph
rebuild`` installs them; then each named graph of either store is read by a scan of that
graph and summed into an order-independent digest (the sum of a hash of each quad):
memory stays constant whatever the journal's length. A graph whose digests differ is read
again on both sides for up to ``show`` quads the store adds and misses (that pass holds
one hash per quad of that graph). Blank nodes are compared as one node: a pack's
Turtle ontology is loaded with fresh labels each time.

Not compared: the meta graph (the watermark, the layout and the journal's identity are
checked as values), the default graph of a remote store, and knowledge graphs no loaded
pack builds any more (an older pack version's: listed as not checked).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pyoxigraph as ox

from ..records import AuditEvent
from ..storage import Journal
from ..storage.graph import META_GRAPH, PROJECTION_VERSION, GraphStore, is_knowledge
from ..storage.oxigraph import OxigraphStore
from .catchup import journal_identity, rebuild
from .knowledge import KnowledgeSource, install
from .packproj import PackProjector

#: the default graph, as a name in a report
DEFAULT_GRAPH = "(default graph)"
_MOD = 1 << 128

#: (phase, done, total): "projecting" events, then "comparing" graphs
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class GraphDiff:
    """One graph that is not the projection's: its quads on each side, and examples."""

    graph: str
    store_quads: int
    expected_quads: int
    added: tuple[str, ...] = ()  # in the store, not in the projection (N-Quads lines)
    missing: tuple[str, ...] = ()  # in the projection, not in the store

    def to_dict(self) -> dict[str, object]:
        return {"graph": self.graph, "store_quads": self.store_quads,
                "expected_quads": self.expected_quads, "added": list(self.added),
                "missing": list(self.missing)}


@dataclass(frozen=True)
class GraphReport:
    """What ``graph verify`` found: equal when nothing differs and no problem was seen."""

    events: int  # the store's watermark: the events compared
    head: int  # the journal's head
    graphs: int  # graphs compared
    differing: tuple[GraphDiff, ...] = ()
    unchecked: tuple[str, ...] = ()  # knowledge graphs no loaded pack builds
    problems: tuple[str, ...] = field(default=())  # the store as a whole (meta graph)

    @property
    def equal(self) -> bool:
        return not self.differing and not self.problems

    def to_dict(self) -> dict[str, object]:
        return {"equal": self.equal, "events": self.events, "head": self.head,
                "graphs": self.graphs, "differing": [d.to_dict() for d in self.differing],
                "unchecked": list(self.unchecked), "problems": list(self.problems)}


class _UpTo:
    """The journal read up to ``seq`` (the store's watermark): what :func:`rebuild` reads."""

    def __init__(self, journal: Journal, seq: int) -> None:
        self._journal, self._seq = journal, seq

    def head(self) -> tuple[int, str]:
        return self._seq, ""

    def first_hash(self) -> str | None:
        return self._journal.first_hash()

    def events(self, *, since_seq: int = 0) -> Iterator[AuditEvent]:
        for ev in self._journal.events(since_seq=since_seq):
            if ev.seq > self._seq:
                return
            yield ev


def _term(term: object) -> str:
    return "_:b" if isinstance(term, ox.BlankNode) else str(term)


def _line(quad: ox.Quad) -> str:
    """The quad as N-Quads, its blank nodes' labels dropped (a text with ``_:`` in a
    literal takes the slow path too: the same quad gives the same line on both sides)."""
    line = str(quad)
    if "_:" not in line:
        return line
    return f"{_term(quad.subject)} {_term(quad.predicate)} {_term(quad.object)} " \
           f"{quad.graph_name}"


def _quads(store: GraphStore, graph: str) -> Iterator[ox.Quad]:
    """The quads of one graph, scanned (embedded) or fetched (remote: one GET)."""
    if isinstance(store, OxigraphStore):
        name = ox.DefaultGraph() if graph == DEFAULT_GRAPH else ox.NamedNode(graph)
        yield from store.store.quads_for_pattern(None, None, None, name)
        return
    text = store.nquads(graphs=[graph])
    yield from ox.parse(text, format=ox.RdfFormat.N_QUADS)


def _key(line: str) -> bytes:
    return hashlib.blake2b(line.encode(), digest_size=16).digest()


def _digest(quads: Iterator[ox.Quad]) -> tuple[int, int]:
    """(quads, their order-independent digest): a graph is a set, summed hash by hash."""
    count = total = 0
    for quad in quads:
        total += int.from_bytes(_key(_line(quad)))
        count += 1
    return count, total % _MOD


def _examples(store: GraphStore, expected: GraphStore, graph: str,
              show: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Up to ``show`` quads of ``graph`` the store adds, and as many it misses."""
    want = {_key(_line(q)) for q in _quads(expected, graph)}
    added: list[str] = []
    for quad in _quads(store, graph):
        key = _key(_line(quad))
        if key in want:
            want.discard(key)
        elif len(added) < show:
            added.append(f"{quad} .")
    missing = [f"{q} ." for q in _quads(expected, graph) if _key(_line(q)) in want][:show]
    return tuple(added), tuple(missing)


def _problems(store: GraphStore, journal: Journal, seq: int, head: int) -> list[str]:
    """What the meta graph says that no projection of this journal says."""
    found: list[str] = []
    if seq > head:
        found.append(f"the store says it holds the projection up to event {seq}, but the "
                     f"journal ends at {head}")
    layout = store.layout() if seq else PROJECTION_VERSION
    if layout != PROJECTION_VERSION:
        found.append(f"the store was written with projection layout {layout}, this "
                     f"cradle-kg projects layout {PROJECTION_VERSION}")
    theirs = getattr(store, "journal_identity", lambda: None)()
    mine = journal_identity(journal)
    if theirs is not None and theirs != mine:
        found.append(f"the store holds the projection of another journal (its first event "
                     f"{theirs[:23]}…, this journal's {(mine or 'none')[:23]}…)")
    return found


def _names(store: GraphStore) -> set[str]:
    names = set(store.graph_names()) - {META_GRAPH}
    if isinstance(store, OxigraphStore) and next(iter(store.store.quads_for_pattern(
            None, None, None, ox.DefaultGraph())), None) is not None:
        names.add(DEFAULT_GRAPH)
    return names


def compare(store: GraphStore, expected: GraphStore, *, show: int = 10,
            progress: Progress | None = None) -> tuple[int, list[GraphDiff], list[str]]:
    """(graphs compared, the differing ones, knowledge graphs not checked)."""
    ours, theirs = _names(store), _names(expected)
    unchecked = sorted(g for g in ours - theirs if is_knowledge(g))
    names = sorted((ours | theirs) - set(unchecked))
    differing: list[GraphDiff] = []
    for done, graph in enumerate(names, 1):
        have, want = _digest(_quads(store, graph)), _digest(_quads(expected, graph))
        if have != want:
            added, missing = _examples(store, expected, graph, show)
            differing.append(GraphDiff(graph, have[0], want[0], added, missing))
        if progress:
            progress("comparing", done, len(names))
    return len(names), differing, unchecked


def verify_graph(store: GraphStore, journal: Journal, *,
                 projectors: Sequence[PackProjector] = (),
                 knowledge: Sequence[KnowledgeSource] = (), show: int = 10,
                 progress: Progress | None = None) -> GraphReport:
    """Compare ``store`` with the projection of ``journal`` up to the store's watermark
    (and the knowledge graphs of ``knowledge``). Reads ``store`` and ``journal`` only."""
    seq = store.projected_seq()
    head, _ = journal.head()
    problems = _problems(store, journal, seq, head)
    upto = min(seq, head)
    with tempfile.TemporaryDirectory(prefix="cradle-graph-verify-") as scratch:
        expected = OxigraphStore.unguarded(Path(scratch) / "graph")
        try:
            rebuild(expected, cast(Journal, _UpTo(journal, upto)), projectors=projectors,
                    progress=(lambda d, t: progress("projecting", d, t)) if progress
                    else None)
            install(expected, knowledge)
            # a bulk-loaded store's overlapping files make every scan read them all: at
            # 1.4 M quads the compaction (2.2 s CPU) saved its scan 3.5 s
            expected.compact()
            graphs, differing, unchecked = compare(store, expected, show=show,
                                                   progress=progress)
        finally:
            expected.close()
    return GraphReport(events=upto, head=head, graphs=graphs, differing=tuple(differing),
                       unchecked=tuple(unchecked), problems=tuple(problems))


__all__ = ["DEFAULT_GRAPH", "GraphDiff", "GraphReport", "compare", "verify_graph"]
