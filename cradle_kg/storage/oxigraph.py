"""The embedded graph store: an on-disk Oxigraph store (``<home>/graph``), the default.

An on-disk store is opened read-write by one process at a time, under
``<home>/graph.lock``; a process that finds it busy is refused in one line
(:class:`~cradle_kg.errors.GraphBusyError`), and a runtime leaves it to catch up later —
the journal has every event. :func:`rebuild_folder` recreates it crash-safely, in a new
folder swapped in only when complete (:mod:`.swap`).

# INVARIANT (see :mod:`.graph`): :meth:`OxigraphStore.apply` parses the whole batch
#   before it writes anything, then writes its net effect and the watermark in ONE
#   ``Store.update`` (one transaction): a kill leaves the batch wholly in or out.
#   :meth:`OxigraphStore.replace_all` writes the watermark after every quad and retraction.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pyoxigraph as ox

from ..crashpoints import crashpoint
from ..errors import GraphStoreError, QueryError
from .graph import (
    DIGEST,
    JOURNAL,
    MAX_EXPORT_BYTES,
    META_GRAPH,
    PROJECTION_VERSION,
    SEQ,
    VERSION,
    QuadBatch,
    QueryResult,
    Term,
    check_knowledge_name,
    export_too_large,
    meta_number,
    meta_replace,
    meta_text,
    rebuilding_mark,
    split_graphs,
    watermark_data,
    watermark_triples,
    watermark_update,
)
from .swap import StoreLock, building_path, remove_folder, settle, swap_in

#: where ``CRADLE_CRASH_AT`` can kill a catch-up (after the N-th committed batch, any store)
SYNC_CRASH_POINTS = ("graph.sync.batch",)


def write_batch(store: ox.Store, batch: QuadBatch, tail: Sequence[str] = ()) -> None:
    """Apply ``batch`` to a pyoxigraph store with the ``tail`` operations in ONE
    ``Store.update`` (one transaction). A batch that is not N-Quads is refused before
    anything is written."""
    try:
        # read through, nothing kept (a list of the parsed quads cost a third more)
        deque(ox.parse(batch.all_nquads(),
                       format=ox.RdfFormat.N_QUADS), maxlen=0)
    except SyntaxError as exc:
        raise GraphStoreError(f"the projection is not N-Quads: {exc}") from None
    # INVARIANT: one update, no ``extend``/``bulk_extend`` here: with those, two runs of
    # the suite left a forked worker (validate's pool, a multiprocessing test) deadlocked
    ops = [*batch.sparql(), *tail]
    if ops:
        store.update(" ;\n".join(ops))


#: quads written by :meth:`OxigraphStore.apply` between two flushes. RocksDB (as Oxigraph
#: configures it) keeps up to 128 MB a column family in its memtables before it flushes
#: them itself, and a write costs more the fuller they are: projecting 12,017 events in
#: batches of 50 cost 0.43 ms/event at first and 0.86 by the end (360,000 quads, never
#: flushed), 0.72 on average, against 0.88 never flushed (25,000 to 100,000 alike). A flush
#: costs ~3 µs a quad written since the last (its CPU and compactions'), which a process
#: that writes fewer quads than this does not pay back: the most this allows
FLUSH_EVERY = 100_000
#: A flush is RocksDB's work (its background thread) while the caller waits: 0.6-1.9 s of
#: wall time under the 4-worker bench's load (PERF: ``bench_workers.py --follow``), during
#: which the projector wrote nothing. The projector (``graph follow``) has its store flush
#: in a thread of its own instead (:meth:`OxigraphStore.flush_in_background`): the writes
#: go on into fresh memtables meanwhile (pyoxigraph leaves the GIL during both).


class _Meta(NamedTuple):
    """The watermark, the layout and their triples (N-Triples), as a writer last saw them."""

    seq: int
    layout: int
    triples: tuple[str, ...]


class OxigraphStore:
    """:class:`~.graph.GraphStore` over a pyoxigraph ``Store`` (on disk, or in memory)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.local_path: Path | None = path
        self._lock: StoreLock | None = None
        self._read_only = read_only
        self._meta: _Meta | None = None
        self._unflushed = 0  # quads written by apply since the last flush
        self._background = False  # flush_in_background(): apply's flushes in a thread
        self._flusher: threading.Thread | None = None  # the flush in flight, if any
        self._flush_error: BaseException | None = None  # what the last one raised
        if read_only:  # a reader under a writer's lock (validate's workers, the endpoint)
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
        except (OSError, RuntimeError) as exc:  # RocksDB reports a damaged folder as either
            raise GraphStoreError(
                f"cannot open the graph store `{self.path}`: {exc}",
                hint="the journal is intact: `cradle-kg graph rebuild` recreates the "
                     "graph") from exc

    @classmethod
    def in_memory(cls) -> OxigraphStore:
        self = cls.__new__(cls)
        self.path = Path(":memory:")
        self.local_path = None
        self._lock = None
        self._read_only = False
        self._meta = None
        self._unflushed = 0
        self._background = False
        self._flusher = None
        self._flush_error = None
        self.store = ox.Store()
        return self

    @classmethod
    def unguarded(cls, path: Path) -> OxigraphStore:
        """A read-write store at ``path`` without the lock: for a folder no one else knows
        of (``graph verify``'s scratch projection); one that cannot be opened is a
        :class:`GraphStoreError`."""
        self = cls.in_memory()
        self.path = self.local_path = path
        self.store = self._open(lambda: ox.Store(str(path)))
        return self

    def describe(self) -> str:
        return str(self.path)

    # --- the watermark ---------------------------------------------------------------

    def _meta_value(self, predicate: str, subject: str = META_GRAPH) -> str | None:
        for quad in self.store.quads_for_pattern(ox.NamedNode(subject),
                                                 ox.NamedNode(predicate), None,
                                                 ox.NamedNode(META_GRAPH)):
            if isinstance(quad.object, ox.Literal):
                return str(quad.object.value)
        return None

    def _read_meta(self) -> _Meta:
        """The watermark, the layout and their triples (N-Triples) as the store holds
        them. A writer (the store's lock, or a store in memory) remembers what its last
        batch wrote: nothing else writes the meta graph's watermark meanwhile, and reading
        it back costs a scan over the old watermarks' tombstones, which grows with every
        batch until RocksDB compacts them (60-110 µs a read after a few hundred rounds).
        What it read is not remembered: only what :meth:`apply` wrote."""
        if self._meta is not None:
            return self._meta
        meta = ox.NamedNode(META_GRAPH)
        found = {predicate: list(self.store.quads_for_pattern(meta, ox.NamedNode(predicate),
                                                              None, meta))
                 for predicate in (SEQ, VERSION)}

        def value(predicate: str, what: str, default: int) -> int:
            # read as a remote store's are: one value, ASCII digits (tests/security/test_445)
            number = meta_number([q.object for q in found[predicate]], what)
            return default if number is None else number

        return _Meta(value(SEQ, "watermark", 0), value(VERSION, "projection layout", 1),
                     tuple(f"{q.subject} {q.predicate} {q.object}"
                           for predicate in (SEQ, VERSION) for q in found[predicate]))

    def projected_seq(self) -> int:
        return self._read_meta().seq

    def layout(self) -> int:
        return self._read_meta().layout

    def journal_identity(self) -> str | None:
        meta = ox.NamedNode(META_GRAPH)
        return meta_text([q.object for q in self.store.quads_for_pattern(
            meta, ox.NamedNode(JOURNAL), None, meta)], "journal identity")

    def bind_journal(self, identity: str) -> None:
        self.store.update(meta_replace({JOURNAL: str(ox.Literal(identity))}))

    def _watermark_triples(self) -> list[str]:
        """The watermark and layout triples the store holds now (N-Triples)."""
        return list(self._read_meta().triples)

    def apply(self, batch: QuadBatch, seq: int) -> None:
        if self._flush_error is not None:  # the last background flush failed: said here
            self._settle_flush()
        # the watermark as data operations: this process is the store's one writer (the
        # store's lock, or a store in memory), so what it read (or wrote last) is what the
        # update deletes; a pattern operation would make the update twice as costly
        current = self._watermark_triples()
        self._meta = None  # until the update is known to have committed
        write_batch(self.store, batch, [watermark_data(current, seq)])
        if not self._read_only:
            self._meta = _Meta(seq, PROJECTION_VERSION, watermark_triples(seq))
        self._unflushed += len(batch)
        if self._unflushed >= FLUSH_EVERY:
            if self._background:
                self._flush_behind()
            else:
                self.flush()

    def flush_in_background(self) -> None:
        """From now on :meth:`apply` has RocksDB flush its memtables in a thread of its
        own, one flush at a time, instead of waiting for it (the projector: its next
        batch is written meanwhile). Flushing moves nothing in or out of the store — the
        committed batches are in RocksDB's write-ahead log either way — so a kill during
        one loses nothing; a failed flush is raised by the next :meth:`apply` (before it
        writes), :meth:`flush` or :meth:`close`. Not for a process that forks while the
        store is open."""
        if not self._read_only:
            self._background = True

    def _flush_behind(self) -> None:
        if self._flusher is not None and self._flusher.is_alive():
            return  # one at a time: the count goes on growing, a later apply starts the next
        self._settle_flush()
        self._unflushed = 0
        store = self.store

        def run() -> None:
            try:
                store.flush()
            except BaseException as exc:  # raised in the writer's thread, by the next call
                self._flush_error = exc

        self._flusher = threading.Thread(target=run, name="cradle-graph-flush", daemon=True)
        self._flusher.start()

    def _settle_flush(self) -> None:
        """Wait for the background flush in flight, if any; raise what it raised."""
        if self._flusher is not None:
            self._flusher.join()
            self._flusher = None
        if self._flush_error is not None:
            exc, self._flush_error = self._flush_error, None
            raise GraphStoreError(f"cannot flush the graph store `{self.path}`: {exc}",
                                  hint="the journal is intact: `cradle-kg graph rebuild` "
                                       "recreates the graph") from exc

    def replace_all(self, nquads: Iterable[str], retractions: Sequence[str],
                    watermark: Callable[[], int]) -> None:
        self._meta = None
        # INVARIANT: marked as being rebuilt before the first graph goes (each removal is
        # a transaction of its own): stopped part-way, the store is rebuilt again by the
        # next catch-up, never resumed from its old watermark (test_404)
        self.store.update(rebuilding_mark())
        for name in split_graphs(self.graph_names())[1] + [META_GRAPH]:
            self.store.remove_graph(ox.NamedNode(name))
        self.store.remove_graph(ox.DefaultGraph())
        for chunk in nquads:
            self.store.bulk_load(chunk, format=ox.RdfFormat.N_QUADS)
        crashpoint("graph.rebuild.loaded")
        for start in range(0, len(retractions), 1000):
            self.store.update("DELETE DATA { " + " ".join(retractions[start:start + 1000])
                              + " }")
        crashpoint("graph.rebuild.retracted")
        # INVARIANT: the watermark last, and exactly the last event projected
        self.store.update(watermark_update(watermark()))
        self._meta = None  # read back by the next reader
        self.store.flush()

    # --- reading ---------------------------------------------------------------------

    def query(self, text: str, *, bound: Mapping[str, Term] | None = None,
              union: bool = True, default_graph: Sequence[str] | None = None,
              named_graphs: Sequence[str] | None = None,
              base_iri: str | None = None) -> QueryResult:
        kw: dict[str, Any] = {}
        if base_iri is not None:
            kw["base_iri"] = base_iri
        if default_graph is not None:
            kw["default_graph"] = [ox.NamedNode(g) for g in default_graph]
        elif union:
            kw["use_default_graph_as_union"] = True
        if named_graphs is not None:
            kw["named_graphs"] = [ox.NamedNode(g) for g in named_graphs]
        if bound:
            kw["substitutions"] = {ox.Variable(k): v for k, v in bound.items()}
        try:
            result: QueryResult = self.store.query(text, **kw)
        except SyntaxError as exc:
            raise QueryError(f"the query does not parse: {exc}") from exc
        except RuntimeError as exc:  # e.g. a substituted variable the query does not project
            raise QueryError(f"the query cannot run: {exc}") from exc
        return result

    def tsv(self, select: str) -> bytes:
        found = self.store.query(select)
        assert isinstance(found, ox.QuerySolutions)
        out = found.serialize(format=ox.QueryResultsFormat.TSV)
        assert out is not None
        return out

    def ask(self, query: str) -> bool:
        found = self.store.query(query)
        assert isinstance(found, ox.QueryBoolean)
        return bool(found)

    def graph_names(self) -> list[str]:
        return sorted(g.value for g in self.store.named_graphs()
                      if isinstance(g, ox.NamedNode))

    def run_graphs(self) -> list[str]:
        return split_graphs(self.graph_names())[0]

    def data_graphs(self) -> list[str]:
        return split_graphs(self.graph_names())[1]

    def knowledge_graphs(self) -> list[str]:
        return split_graphs(self.graph_names())[2]

    def knowledge_digest(self, graph: str) -> str | None:
        return self._meta_value(DIGEST, graph)

    def install_knowledge(self, graph: str, digest: str, data: str, *,
                          turtle: bool = False) -> None:
        check_knowledge_name(graph)
        name = ox.NamedNode(graph)
        fmt = ox.RdfFormat.TURTLE if turtle else ox.RdfFormat.N_TRIPLES
        try:  # INVARIANT: parsed before the graph is emptied (as the remote store does)
            deque(ox.parse(data, format=fmt), maxlen=0)
        except SyntaxError as exc:
            raise GraphStoreError(f"knowledge graph `{graph}` does not parse: "
                                  f"{' '.join(str(exc).split())}") from None
        self.store.update(f"DELETE WHERE {{ GRAPH <{META_GRAPH}> {{ <{graph}> <{DIGEST}> "
                          "?d } }")
        if name in set(self.store.named_graphs()):
            self.store.remove_graph(name)
        self.store.bulk_load(data, format=fmt, to_graph=name)
        self.store.update(f"INSERT DATA {{ GRAPH <{META_GRAPH}> {{ <{graph}> <{DIGEST}> "
                          f"\"{digest}\" }} }}")

    def nquads(self, *, graphs: Iterable[str] | None = None,
               max_bytes: int = MAX_EXPORT_BYTES) -> str:
        wanted = set(graphs) if graphs is not None else set(self.data_graphs())
        lines: list[str] = []
        room = max_bytes
        for quad in self.store:
            if isinstance(quad.graph_name, ox.NamedNode) and quad.graph_name.value in wanted:
                line = f"{quad} .\n"
                room -= len(line.encode())
                if room < 0:
                    raise export_too_large(max_bytes)
                lines.append(line)
        return "".join(sorted(lines))

    def backup(self, folder: Path) -> None:
        """A RocksDB checkpoint of the store (hard links) at ``folder``."""
        self.store.backup(str(folder))

    def flush(self) -> None:
        self._settle_flush()
        self.store.flush()
        self._unflushed = 0

    def compact(self) -> None:
        """RocksDB's full compaction of the store (``Store.optimize``): after a bulk load
        the files overlap, and every scan reads them all (:func:`rebuild_folder`)."""
        try:
            self.store.flush()  # what the memtable holds goes into the compaction too
            self.store.optimize()
        except OSError as exc:
            raise GraphStoreError(f"cannot compact the graph store `{self.path}`: "
                                  f"{exc.strerror or exc}") from exc

    def detach(self, *, drop_meta: bool = False) -> ox.Store:
        """Hand the pyoxigraph store to a new owner (the server's private store, which
        publishes checkpoints of it), without the meta graph if ``drop_meta``; this object
        is closed (its lock released)."""
        self._settle_flush()
        store = self.store
        self._meta = None
        if drop_meta:
            store.remove_graph(ox.NamedNode(META_GRAPH))
        del self.store
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        return store

    def close(self) -> None:
        """Flush and close the store, then (only then) drop the lock (a read-only store
        has nothing to flush: pyoxigraph refuses a flush there)."""
        failed: GraphStoreError | None = None
        if hasattr(self, "store"):
            try:
                self._settle_flush()  # a background flush in flight: waited for first
            except GraphStoreError as exc:  # said once the store is closed
                failed = exc
            if not self._read_only:
                self.store.flush()
            del self.store
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if failed is not None:
            raise failed


def rebuild_folder(path: Path, load: Callable[[OxigraphStore], int], *,
                   locked: StoreLock | None = None,
                   compacting: Callable[[], None] | None = None) -> tuple[int, int]:
    """Recreate the on-disk store at ``path`` crash-safely: the lock first (or
    :class:`~cradle_kg.errors.GraphBusyError`; ``locked`` when the caller took it), then
    ``load`` fills a new store in ``graph.building``, which is compacted (``compacting``
    is called first) and swapped in when complete (:mod:`.swap`). Returns (what ``load``
    returned, quads).

    A store just loaded is many overlapping files, and stays so until a process holds it
    long enough for RocksDB's background compaction: the bench's aggregate over every
    decision of a 1.4 M-quad store cost 3.3 times the CPU before compaction (162 against
    49 ms), the named queries 2-3 times (README, issue 17). The compaction costs about a
    third of the load (5.7 s at 1.4 M quads)."""
    lock = locked if locked is not None else StoreLock(path).acquire()
    building = building_path(path)
    try:
        settle(path)
        crashpoint("graph.rebuild.building")
        fresh = OxigraphStore.in_memory()
        fresh.store = ox.Store(str(building))
        fresh.path = fresh.local_path = building
        count = load(fresh)
        quads = len(fresh.store)
        if compacting is not None:
            compacting()
        fresh.compact()
        crashpoint("graph.rebuild.compacted")
        fresh.close()  # closed: RocksDB writes nothing more into the folder
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


def read_only_tsv(path: str) -> Callable[[str], bytes]:
    """A read-only handle's ``tsv`` on the on-disk store at ``path`` (validate's workers)."""
    return OxigraphStore(Path(path), read_only=True).tsv


__all__ = ["SYNC_CRASH_POINTS", "OxigraphStore", "read_only_tsv", "rebuild_folder"]
