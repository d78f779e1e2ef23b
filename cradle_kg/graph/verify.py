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
one hash per quad of that graph). The hash is keyed with a key drawn for each
comparison: a sum of public hashes can be matched by edits crafted for it (Wagner's
generalised birthday attack on additive multiset hashes), a sum under a key chosen after
the edit cannot.

Blank nodes. A pack's Turtle ontology is loaded with fresh labels each time, so labels
are not compared; but a graph is not its quads with the labels dropped (two OWL
restrictions whose ``owl:onProperty`` were swapped hold the same such quads:
``tests/security/test_442``). A graph whose blank-node quads the projection writes is
compared a second time, its blank nodes coloured by colour refinement (each coloured by
what it is linked to, refined until the colours stop splitting, as many rounds on both
sides as the projection's side takes): the trees a Turtle file's ``[]`` and ``()`` write
are told apart exactly. Memory: the blank-node quads of that graph, the store's read up to
as many as the projection's.

The meta graph is not compared with the scratch store's (the watermark, the layout and
the journal's identity are checked as values), but every quad of it is read: it is a named
graph every query's union default graph and ``GRAPH ?g`` read, and a quad there that is
none of those values (or a second one) is a problem of the store (``tests/security/
test_443``). Not compared: the default graph of a remote store, and knowledge graphs no
loaded pack builds any more (an older pack version's: listed as not checked) — each read
against the rule every pack's knowledge is built under instead: none of its quads is the
runtime's own record (``tests/security/test_540``).
"""

from __future__ import annotations

import hashlib
import secrets
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import cast

import pyoxigraph as ox

from ..records import AuditEvent
from ..storage import Journal
from ..storage.graph import (
    DIGEST,
    JOURNAL,
    META_GRAPH,
    PROJECTION_VERSION,
    SEQ,
    VERSION,
    GraphStore,
    is_knowledge,
)
from ..storage.oxigraph import OxigraphStore
from .catchup import journal_identity, rebuild
from .knowledge import KnowledgeSource, install, not_knowledge
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


#: a blank node's colour (:func:`_refine`), by node
Colors = dict[ox.BlankNode, bytes]


def _term(term: object, colors: Colors | None = None) -> str:
    if not isinstance(term, ox.BlankNode):
        return str(term)
    return "_:b" if colors is None else f"_:c{colors[term].hex()}"


def _blank(quad: ox.Quad) -> bool:
    return isinstance(quad.subject, ox.BlankNode) or isinstance(quad.object, ox.BlankNode)


def _line(quad: ox.Quad, colors: Colors | None = None) -> str:
    """The quad as N-Quads, each blank node's label dropped — or, with ``colors``, given
    as its colour (a text with ``_:`` in a literal takes the slow path too: the same quad
    gives the same line on both sides)."""
    line = str(quad)
    if "_:" not in line:
        return line
    return f"{_term(quad.subject, colors)} {_term(quad.predicate)} " \
           f"{_term(quad.object, colors)} {quad.graph_name}"


def _quads(store: GraphStore, graph: str) -> Iterator[ox.Quad]:
    """The quads of one graph, scanned (embedded) or fetched (remote: one GET)."""
    if isinstance(store, OxigraphStore):
        name = ox.DefaultGraph() if graph == DEFAULT_GRAPH else ox.NamedNode(graph)
        yield from store.store.quads_for_pattern(None, None, None, name)
        return
    text = store.nquads(graphs=[graph])
    yield from ox.parse(text, format=ox.RdfFormat.N_QUADS)


def _key(line: str, key: bytes) -> bytes:
    return hashlib.blake2b(line.encode(), digest_size=16, key=key).digest()


def _digest(quads: Iterator[ox.Quad], key: bytes) -> tuple[int, int, int]:
    """(quads, their order-independent digest, those with a blank node): a graph is a
    set, summed hash by hash."""
    count = total = blanks = 0
    for quad in quads:
        total += int.from_bytes(_key(_line(quad), key))
        count += 1
        blanks += _blank(quad)
    return count, total % _MOD, blanks


def _refine(quads: Sequence[ox.Quad], key: bytes, rounds: int | None = None
            ) -> tuple[int, Colors]:
    """Colour refinement of the blank nodes of ``quads``: (rounds, the colours after them).

    Every blank node starts with one colour; a round gives each the hash of its colour and
    of the sorted hashes of its links — the predicate, the direction and the other end (a
    term as it is, a blank node as its colour). A colour is a function of the structure
    only, never of a label. ``rounds`` None: until a round splits no colour class (the
    colours then say all that refinement ever will; at most one round per blank node);
    else that many rounds. Equal colour counts of two graphs after the rounds one of them
    needed to settle: refinement does not tell them apart (a tree, which a Turtle file's
    ``[]`` and ``()`` write, it tells apart from every other graph)."""
    nodes = {t for q in quads for t in (q.subject, q.object) if isinstance(t, ox.BlankNode)}
    colors: Colors = dict.fromkeys(nodes, b"")
    classes, done = min(len(nodes), 1), 0
    while rounds is None or done < rounds:
        links: dict[ox.BlankNode, list[bytes]] = {node: [] for node in nodes}
        for quad in quads:
            subject, obj, predicate = quad.subject, quad.object, quad.predicate.value
            if isinstance(subject, ox.BlankNode):
                links[subject].append(_key(repr(("out", predicate, _end(obj, colors))), key))
            if isinstance(obj, ox.BlankNode):
                links[obj].append(_key(repr(("in", predicate, _end(subject, colors))), key))
        colors = {node: _key(repr((colors[node].hex(), sorted(links[node]))), key)
                  for node in nodes}
        done += 1
        settled, classes = len(set(colors.values())) == classes, len(set(colors.values()))
        if rounds is None and settled:
            break
    return done, colors


def _end(term: object, colors: Colors) -> str:
    return f"_:c{colors[term].hex()}" if isinstance(term, ox.BlankNode) else str(term)


def _blank_quads(store: GraphStore, graph: str, most: int) -> list[ox.Quad] | None:
    """The quads of ``graph`` with a blank node, or None past ``most`` of them."""
    found: list[ox.Quad] = []
    for quad in _quads(store, graph):
        if _blank(quad):
            if len(found) == most:
                return None
            found.append(quad)
    return found


def _structure(quads: Sequence[ox.Quad], colors: Colors, key: bytes) -> int:
    """The order-independent digest of blank-node quads with their nodes' colours."""
    total = sum(int.from_bytes(_key(_line(q, colors), key)) for q in quads)
    return (total + sum(int.from_bytes(_key(c.hex(), key)) for c in colors.values())) % _MOD


def _blank_colors(store: GraphStore, expected: GraphStore, graph: str, blanks: int,
                  key: bytes) -> tuple[Colors | None, Colors | None] | None:
    """None when the blank-node structures of ``graph`` compare equal (refinement does
    not tell the two sides apart); else what to show the quads with: each side's colours
    (None, None: the store's graph changed between two reads — a remote store — and its
    blank nodes are shown as one node)."""
    want = _blank_quads(expected, graph, blanks)
    have = _blank_quads(store, graph, blanks)
    if want is None or have is None:
        return None, None
    rounds, theirs = _refine(want, key)
    _, ours = _refine(have, key, rounds)
    if len(have) == len(want) and _structure(have, ours, key) == _structure(want, theirs,
                                                                            key):
        return None
    return ours, theirs


def _examples(store: GraphStore, expected: GraphStore, graph: str, show: int, key: bytes,
              colors: tuple[Colors | None, Colors | None] | None = None
              ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Up to ``show`` quads of ``graph`` the store adds, and as many it misses
    (``colors``: each side's blank nodes, when it is their structure that differs)."""
    ours, theirs = colors if colors is not None else (None, None)
    want = {_key(_line(q, theirs), key) for q in _quads(expected, graph)}
    added: list[str] = []
    for quad in _quads(store, graph):
        line_key = _key(_line(quad, ours), key)
        if line_key in want:
            want.discard(line_key)
        elif len(added) < show:
            added.append(f"{quad} .")
    missing = [f"{q} ." for q in _quads(expected, graph)
               if _key(_line(q, theirs), key) in want][:show]
    return tuple(added), tuple(missing)


#: the values the projection writes about the meta graph itself, one of each
_META_VALUES = frozenset({SEQ, VERSION, JOURNAL})


def _meta_quads(store: GraphStore, show: int) -> str | None:
    """What the meta graph holds that no projection writes there, or None. It holds one
    literal of each of :data:`_META_VALUES` about itself and one digest (a literal) about
    each knowledge graph; a quad of another shape, or a second one of those, is read by
    every query of the union default graph or of ``GRAPH ?g`` — a forged approval put
    there was shown by ``query approvals`` (``tests/security/test_443``). Holds one short
    hash per knowledge graph's digest."""
    seen: set[bytes] = set()
    odd: list[str] = []
    count = 0
    for quad in _quads(store, META_GRAPH):
        subject, predicate = quad.subject, quad.predicate.value
        fits = isinstance(subject, ox.NamedNode) and isinstance(quad.object, ox.Literal) \
            and ((subject.value == META_GRAPH and predicate in _META_VALUES)
                 or (is_knowledge(subject.value) and predicate == DIGEST))
        once = hashlib.blake2b(f"{subject} {predicate}".encode(), digest_size=12).digest()
        if fits and once not in seen:
            seen.add(once)
            continue
        count += 1
        if len(odd) < show:
            odd.append(f"{quad} .")
    if not count:
        return None
    return (f"the meta graph <{META_GRAPH}> holds {count} quad(s) no projection writes "
            "there (every query of the union default graph or of GRAPH ?g reads them)"
            + "".join(f"; + {line}" for line in odd))


def _blank_graphs(store: GraphStore, show: int) -> str | None:
    """The embedded store's graphs named by a blank node, which no projection writes and
    :meth:`~.OxigraphStore.graph_names` does not list — every query of the union default
    graph or of ``GRAPH ?g`` reads them (``tests/security/test_444``) — or None."""
    if not isinstance(store, OxigraphStore):
        return None  # a remote store's graphs outside cradle-kg's names are not its
    graphs = [g for g in store.store.named_graphs() if isinstance(g, ox.BlankNode)]
    if not graphs:
        return None
    shown = [f"{quad} ." for graph in graphs
             for quad in islice(store.store.quads_for_pattern(None, None, None, graph), show)]
    return (f"the store holds {len(graphs)} graph(s) named by a blank node, which no "
            "projection writes (every query of the union default graph or of GRAPH ?g "
            "reads them)" + "".join(f"; + {line}" for line in shown[:show]))


def _foreign_knowledge(store: GraphStore, graphs: Sequence[str], show: int) -> str | None:
    """The quads of the knowledge graphs no loaded pack builds (so not compared) that no
    knowledge graph may hold (:func:`.knowledge.not_knowledge`: the runtime's own terms or
    objects, which every query of the union default graph reads as its record), or None.
    An older pack version's graph holds none: it was built under the same rule
    (``tests/security/test_540``). One scan of each, nothing kept but what is shown."""
    shown: list[str] = []
    found = 0
    for graph in graphs:
        for quad in _quads(store, graph):
            if not_knowledge(str(quad.subject), str(quad.predicate), str(quad.object)):
                found += 1
                if len(shown) < show:
                    shown.append(f"<{graph}>: {quad.subject} {quad.predicate} {quad.object} .")
    if not found:
        return None
    return (f"{found} quad(s) of knowledge graphs no loaded pack builds state the runtime's "
            "own terms or objects, which no pack's knowledge may (every query of the union "
            "default graph reads them)" + "".join(f"; + {line}" for line in shown))


def _problems(store: GraphStore, journal: Journal, seq: int, head: int,
              show: int) -> list[str]:
    """What the meta graph says that no projection of this journal says, and the quads
    outside every graph compared (:func:`_meta_quads`, :func:`_blank_graphs`)."""
    found = [odd for odd in (_meta_quads(store, show), _blank_graphs(store, show))
             if odd is not None]
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
    key = secrets.token_bytes(32)  # drawn now, after any edit of the store
    for done, graph in enumerate(names, 1):
        have, want = _digest(_quads(store, graph), key), _digest(_quads(expected, graph), key)
        colors = _blank_colors(store, expected, graph, want[2], key) \
            if have == want and want[2] else None
        if have != want or colors is not None:
            added, missing = _examples(store, expected, graph, show, key, colors)
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
    problems = _problems(store, journal, seq, head, show)
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
            foreign = _foreign_knowledge(store, unchecked, show)
            if foreign is not None:
                problems.append(foreign)
        finally:
            expected.close()
    return GraphReport(events=upto, head=head, graphs=graphs, differing=tuple(differing),
                       unchecked=tuple(unchecked), problems=tuple(problems))


__all__ = ["DEFAULT_GRAPH", "GraphDiff", "GraphReport", "compare", "verify_graph"]
