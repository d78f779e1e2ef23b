"""The graph store: the journal's RDF projection in an on-disk Oxigraph store.

The store is a projection, never the truth: it records the last journal ``seq`` it has
projected (the *watermark*, in a meta graph) and catches up from the journal on
:meth:`GraphStore.sync`. :func:`rebuild` recreates it from nothing, in a new folder that
is swapped in only when complete (:mod:`.swap`). An on-disk store is opened read-write by
one process at a time, under ``<home>/graph.lock``; a process that finds it busy is
refused in one line, and a runtime leaves it to catch up later — the journal has every
event.

# INVARIANT: the watermark is never ahead of the store's content. ``sync`` writes each
#   batch — its quads, then its retractions, in journal order, then the new watermark —
#   as ONE SPARQL update, which Oxigraph applies in one transaction: a kill leaves the
#   batch wholly in or wholly out. ``rebuild`` writes the watermark after every quad and
#   retraction, and the folder is swapped in only after that.
# INVARIANT: replaying events already projected changes nothing (inserts and retractions
#   are set operations, replayed in journal order), so a watermark that is behind is safe.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from ..crashpoints import crashpoint
from ..errors import GraphStoreError
from ..records import AuditEvent
from ..storage import Journal
from .packproj import PackProjector
from .project import SHARED_GRAPH, event_quads, event_retractions, project_event, run_graph
from .swap import StoreLock, building_path, remove_folder, settle, swap_in
from .vocab import CRADLE_NS

META_GRAPH = "https://w3id.org/cradle/meta"
#: named graphs of packs' knowledge (ontology, reference data): ``…/pack/<id>/<version>/<name>``
KNOWLEDGE_BASE = "https://w3id.org/cradle/pack/"
_DIGEST = f"<{CRADLE_NS}knowledgeDigest>"
_SEQ = f"<{CRADLE_NS}projectedSeq>"
_META = f"<{META_GRAPH}>"
_INT = "http://www.w3.org/2001/XMLSchema#integer"

#: where ``CRADLE_CRASH_AT`` can kill a sync (after the N-th committed batch)
SYNC_CRASH_POINTS = ("graph.sync.batch",)

Progress = Callable[[int, int], None]


#: the layout of the projection; a store written with another one is rebuilt on its next
#: sync (2: shared objects in the shared graph, not copied into each run graph; 3: the
#: `awaitsUse` and `awaitsVerification` flags the listing queries find by index)
PROJECTION_VERSION = 3
_VERSION = f"<{CRADLE_NS}projectionVersion>"


def _watermark_update(seq: int) -> str:
    return (f"DELETE WHERE {{ GRAPH {_META} {{ {_META} {_SEQ} ?seq }} }} ;\n"
            f"DELETE WHERE {{ GRAPH {_META} {{ {_META} {_VERSION} ?version }} }} ;\n"
            f"INSERT DATA {{ GRAPH {_META} {{ {_META} {_SEQ} \"{seq}\"^^<{_INT}> . "
            f"{_META} {_VERSION} \"{PROJECTION_VERSION}\"^^<{_INT}> }} }}")


class GraphStore:
    def __init__(self, path: Path, *, read_only: bool = False,
                 projectors: Sequence[PackProjector] = ()) -> None:
        self.path = path
        #: the loaded packs' projection hooks; their triples follow each event's own
        self.projectors = projectors
        self._lock: StoreLock | None = None
        if read_only:  # a reader under a writer's lock (validate's workers, tests)
            self.store = self._open(lambda: ox.Store.read_only(str(path)))
            return
        lock = StoreLock(path).acquire()  # first: before anything is created or removed
        try:
            try:
                settle(path)
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise GraphStoreError(f"cannot prepare the graph store `{path}`: "
                                      f"{exc.strerror or exc}") from exc
            self.store = self._open(lambda: ox.Store(str(path)))
        except BaseException:
            lock.release()
            raise
        self._lock = lock

    def _open(self, opener: Callable[[], ox.Store]) -> ox.Store:
        try:
            return opener()
        except OSError as exc:
            raise GraphStoreError(
                f"cannot open the graph store `{self.path}`: {exc}",
                hint="the journal is intact: `cradle-kg graph rebuild` recreates the "
                     "graph") from exc

    @classmethod
    def in_memory(cls, *, projectors: Sequence[PackProjector] = ()) -> GraphStore:
        self = cls.__new__(cls)
        self.path = Path(":memory:")
        self.projectors = projectors
        self._lock = None
        self.store = ox.Store()
        return self

    def projected_seq(self) -> int:
        return self.seq_of(self.store)

    def layout(self) -> int:
        """The projection layout the store was written with (1: before it was recorded)."""
        for quad in self.store.quads_for_pattern(ox.NamedNode(META_GRAPH),
                                                 ox.NamedNode(_VERSION[1:-1]), None,
                                                 ox.NamedNode(META_GRAPH)):
            if isinstance(quad.object, ox.Literal):
                return int(quad.object.value)
        return 1

    @staticmethod
    def seq_of(store: ox.Store) -> int:
        """The watermark of any Oxigraph store holding a projection (0 when none)."""
        for quad in store.quads_for_pattern(ox.NamedNode(META_GRAPH), None, None,
                                            ox.NamedNode(META_GRAPH)):
            if quad.predicate.value == _SEQ[1:-1] and isinstance(quad.object, ox.Literal):
                return int(quad.object.value)
        return 0

    def sync(self, journal: Journal, *, batch: int = 5_000,
             progress: Progress | None = None) -> int:
        """Project every event after the watermark; returns how many were added.

        Each batch of ``batch`` events is one transaction that ends by moving the
        watermark (module docstring)."""
        if self.projected_seq() and self.layout() != PROJECTION_VERSION:
            # written by an older cradle-kg: its triples are laid out otherwise (policies
            # copied into run graphs); the watermark goes with the clear, so a kill
            # half-way leaves a store that the next sync projects again from the start
            return self.rebuild(journal, progress=progress)
        start = self.projected_seq()
        head, _ = journal.head()
        done = last = 0
        ops: list[str] = []
        for ev in journal.events(since_seq=start):
            _event_ops(ev, ops, self.projectors)
            done += 1
            last = ev.seq
            if done % batch == 0:
                self._commit(ops, last)
                if progress:
                    progress(last - start, head - start)
        if done % batch:  # an event without triples still moves the watermark
            self._commit(ops, last)
        if progress:
            progress(max(last, start) - start, head - start)
        return done

    def _commit(self, ops: list[str], seq: int) -> None:
        """One transaction: the batch's inserts and retractions, then the watermark."""
        ops.append(_watermark_update(seq))
        self.store.update(" ;\n".join(ops))
        ops.clear()
        crashpoint("graph.sync.batch")

    def rebuild(self, journal: Journal, *, progress: Progress | None = None) -> int:
        """Drop everything in this store and project the whole journal again (bulk
        loading); the watermark is written last. :func:`rebuild` is the crash-safe way to
        do it on disk: this one is for a store nobody else can see (in memory, a new
        folder)."""
        self.store.clear()
        return _project_all(self.store, journal, progress, self.projectors)

    def run_graphs(self) -> list[str]:
        """The run graphs (not the meta graph, the shared graph or packs' knowledge)."""
        return sorted(g.value for g in self.store.named_graphs()
                      if g.value not in (META_GRAPH, SHARED_GRAPH)
                      and not g.value.startswith(KNOWLEDGE_BASE))

    def data_graphs(self) -> list[str]:
        """Every graph of the projection: the run graphs and the shared graph (not the
        packs' knowledge, which is installed from the packs, not projected)."""
        return sorted(g.value for g in self.store.named_graphs()
                      if g.value != META_GRAPH and not g.value.startswith(KNOWLEDGE_BASE))

    # --- packs' knowledge (issue 14): named graphs of their own, loaded once per content ---

    def knowledge_graphs(self) -> list[str]:
        return sorted(g.value for g in self.store.named_graphs()
                      if g.value.startswith(KNOWLEDGE_BASE))

    def knowledge_digest(self, graph: str) -> str | None:
        """The digest of what ``graph`` was installed from, or None (not installed)."""
        for quad in self.store.quads_for_pattern(ox.NamedNode(graph),
                                                 ox.NamedNode(_DIGEST[1:-1]), None,
                                                 ox.NamedNode(META_GRAPH)):
            if isinstance(quad.object, ox.Literal):
                return str(quad.object.value)
        return None

    def install_knowledge(self, graph: str, digest: str, data: str, *,
                          turtle: bool = False) -> None:
        """Replace ``graph`` with ``data`` (N-Triples, or Turtle), then record ``digest``:
        the marker last, so an interrupted install is redone on the next open."""
        if not graph.startswith(KNOWLEDGE_BASE):
            raise GraphStoreError(f"`{graph}` is not a knowledge graph name")
        name = ox.NamedNode(graph)
        self.store.update(f"DELETE WHERE {{ GRAPH {_META} {{ <{graph}> {_DIGEST} ?d }} }}")
        if name in set(self.store.named_graphs()):
            self.store.remove_graph(name)
        fmt = ox.RdfFormat.TURTLE if turtle else ox.RdfFormat.N_TRIPLES
        self.store.bulk_load(data, format=fmt, to_graph=name)
        self.store.update(f"INSERT DATA {{ GRAPH {_META} {{ <{graph}> {_DIGEST} "
                          f"\"{digest}\" }} }}")

    def nquads(self, *, graphs: Iterable[str] | None = None) -> str:
        """The store as canonical N-Quads: sorted, meta graph left out (and the packs'
        knowledge graphs, unless ``graphs`` names them)."""
        wanted = set(graphs) if graphs is not None else None
        lines = []
        for quad in self.store:
            g = quad.graph_name
            name = g.value if isinstance(g, ox.NamedNode) else ""
            if name == META_GRAPH or (wanted is not None and name not in wanted) or (
                    wanted is None and name.startswith(KNOWLEDGE_BASE)):
                continue
            lines.append(f"{quad} .\n")
        return "".join(sorted(lines))

    def query(self, sparql: str, **kw: Any) -> Any:
        return self.store.query(sparql, use_default_graph_as_union=True, **kw)

    def close(self) -> None:
        """Flush and close the store, then (only then) drop the lock."""
        if hasattr(self, "store"):
            self.store.flush()
            del self.store
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _event_ops(ev: AuditEvent, ops: list[str],
               projectors: Sequence[PackProjector] = ()) -> None:
    """The SPARQL update operations of one event: its quads, then what it retracts."""
    graph = run_graph(ev.run_id)
    triples, shared = event_quads(ev, projectors=projectors)
    if triples or shared:
        body = f"GRAPH {graph} {{ {' . '.join(triples)} }}" if triples else ""
        if shared:
            body += f" GRAPH <{SHARED_GRAPH}> {{ {' . '.join(shared)} }}"
        ops.append(f"INSERT DATA {{ {body} }}")
    retract = event_retractions(ev)
    if retract:
        ops.append(f"DELETE DATA {{ GRAPH {graph} {{ {' . '.join(retract)} }} }}")


def _project_all(store: ox.Store, journal: Journal, progress: Progress | None,
                 projectors: Sequence[PackProjector] = ()) -> int:
    head, _ = journal.head()
    chunk: list[str] = []
    retractions: list[str] = []
    count = last = 0
    for ev in journal.events():
        chunk.extend(project_event(ev, projectors))
        graph = run_graph(ev.run_id)
        retractions.extend(f"GRAPH {graph} {{ {t} }}" for t in event_retractions(ev))
        count += 1
        last = ev.seq
        if len(chunk) >= 200_000:
            store.bulk_load("".join(chunk), format=ox.RdfFormat.N_QUADS)
            chunk.clear()
            if progress:
                progress(ev.seq, head)
    if chunk:
        store.bulk_load("".join(chunk), format=ox.RdfFormat.N_QUADS)
    crashpoint("graph.rebuild.loaded")
    for start in range(0, len(retractions), 1000):
        store.update("DELETE DATA { " + " ".join(retractions[start:start + 1000]) + " }")
    crashpoint("graph.rebuild.retracted")
    # INVARIANT: the watermark last, and exactly the last event projected (events appended
    # while this ran may be in or out; a later sync replays them harmlessly)
    store.update(_watermark_update(last))
    store.flush()
    if progress:
        progress(head, head)
    return count


#: the projection's write steps, for a store the caller owns (the endpoint's private store)
event_ops = _event_ops
project_all = _project_all


def rebuild(path: Path, journal: Journal, *, progress: Progress | None = None,
            locked: StoreLock | None = None,
            projectors: Sequence[PackProjector] = ()) -> tuple[int, int]:
    """Recreate the on-disk store at ``path`` from the journal, crash-safely: the lock
    first (or :class:`~cradle_kg.errors.GraphBusyError`; ``locked`` when the caller took
    it), then a complete store built in ``graph.building`` and swapped in (:mod:`.swap`).
    Returns (events, quads)."""
    lock = locked if locked is not None else StoreLock(path).acquire()
    building = building_path(path)
    try:
        settle(path)
        crashpoint("graph.rebuild.building")
        store = ox.Store(str(building))
        count = _project_all(store, journal, progress, projectors)
        quads = len(store)
        del store  # closed: RocksDB writes nothing more into the folder
        swap_in(path)
    except OSError as exc:  # disk full, permissions: the live store was not touched
        with contextlib.suppress(OSError):  # else the next open removes it
            remove_folder(building)
        raise GraphStoreError(f"cannot rebuild the graph store `{path}`: "
                              f"{exc.strerror or exc}") from exc
    finally:
        if locked is None:
            lock.release()
    return count, quads
