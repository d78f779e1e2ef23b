"""What the query workers read: read-only checkpoints of the server's own on-disk store.

An on-disk Oxigraph store is opened read-write by one process at a time, and opening it
read-only while another process writes is undefined behaviour. So no worker opens the
home's store, and no worker holds a graph in memory:

* the server, at start, makes a **private store** in its work folder: a checkpoint of the
  home's store (hard links, brought up to the journal first) when it is free, else a
  projection of the journal; when serving files, the files bulk-loaded. Its meta graph is
  dropped (the server keeps the projected seq in memory);
* it publishes **generations**: RocksDB checkpoints of the private store (hard links,
  milliseconds), each a folder nobody ever writes again. A worker opens the newest one
  read-only — ready in milliseconds, whatever the size of the graph, with only RocksDB's
  caches in memory;
* before a query is handed to a worker, the server catches the private store up from the
  journal (SQLite, which many processes may read) with the same pure projection the
  runtime uses, and publishes a new generation when events arrived; the job names the
  generation, and a worker on an older one reopens. Same journal, same triples: a
  worker's graph equals the home's graph at the journal head when the query was sent.

A worker killed after a timeout is replaced by one that opens the same generation: a
timeout costs no reload. A generation no worker uses any more is removed.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pyoxigraph as ox

from ..errors import CradleError, InputError, RdfParseError
from ..graph.catchup import catch_up, rebuild
from ..graph.knowledge import install
from ..home import Home
from ..storage import Journal, open_home_journal
from ..storage.graph import PROJECTION_VERSION, QuadBatch
from ..storage.graph_opening import is_remote
from ..storage.oxigraph import OxigraphStore, write_batch
from .worker import Source

if TYPE_CHECKING:
    from ..graph.packproj import PackProjector

_EXTENSIONS: Final = {".ttl": ox.RdfFormat.TURTLE, ".turtle": ox.RdfFormat.TURTLE,
                      ".trig": ox.RdfFormat.TRIG, ".nq": ox.RdfFormat.N_QUADS,
                      ".nquads": ox.RdfFormat.N_QUADS, ".nt": ox.RdfFormat.N_TRIPLES,
                      ".ntriples": ox.RdfFormat.N_TRIPLES, ".jsonld": ox.RdfFormat.JSON_LD,
                      ".json": ox.RdfFormat.JSON_LD}


def rdf_format(path: Path) -> ox.RdfFormat:
    try:
        return _EXTENSIONS[path.suffix.lower()]
    except KeyError:
        raise RdfParseError(f"cannot tell the RDF format of extension `{path.suffix}`",
                            file=str(path),
                            hint="use .ttl .trig .nt .nq .jsonld") from None


class PrivateStore:
    """The server's own store, kept up to the journal and published as generations."""

    def __init__(self, workdir: Path, store: ox.Store, seq: int, journal: Journal | None,
                 projectors: Sequence[PackProjector] = ()) -> None:
        self.workdir = workdir
        self.store = store
        self.seq = seq
        #: the home's journal (whichever backend its configuration names), or None
        self.journal = journal
        #: the enabled packs' projection hooks: the same triples as the runtime's store
        self.projectors = projectors
        #: the quads at start, counted in the background (a count reads the whole store:
        #: 1.5 s at 1.1 M quads, which the server need not wait for); -1 until known
        self.triples = -1
        self._lock = threading.Lock()
        self._count = 0
        self.current = self._publish()
        #: the journal seq the current generation holds
        self.current_seq = seq
        self._live: set[Path] = {self.current}
        threading.Thread(target=self._count_quads, name="cradle-count", daemon=True).start()

    def _count_quads(self) -> None:
        with contextlib.suppress(Exception):  # closed meanwhile: the count is not needed
            self.triples = len(ox.Store.read_only(str(self.current)))

    def source(self) -> Source:
        return Source(generation=self.current, triples=self.triples)

    def _publish(self) -> Path:
        self._count += 1
        folder = self.workdir / f"generation-{self._count}"
        self.store.backup(str(folder))
        return folder

    def latest(self) -> Path:
        """The newest generation, once the journal's new events (if any) are in it (by
        the one catch-up loop, :func:`~cradle_kg.graph.catchup.catch_up`)."""
        if self.journal is None:
            return self.current
        with self._lock:
            head, _ = self.journal.head()
            if head > self.seq:
                catch_up(self, self.journal, projectors=self.projectors, batch=10**9)
            # INVARIANT: published whenever the store holds events the current generation
            # does not — a catch-up whose checkpoint failed included (before, the next ask
            # found the store up to date and answered the old generation:
            # tests/security/test_167)
            if self.seq > self.current_seq:
                self.current = self._publish()
                self.current_seq = self.seq
                self._live.add(self.current)
            return self.current

    def compact(self) -> None:
        """Compact the private store and publish a generation of the result.

        A checkpoint of the home's store (or a projection bulk-loaded) is left in many
        overlapping files: a scan over every decision of a 1.4 M-quad store read them all,
        3.3 times the CPU of the same scan once compacted (162 against 49 ms). RocksDB's
        own background compaction did the work anyway, unseen by the workers, whose
        generations are checkpoints taken before it. Run on a thread of its own (the
        engine releases the GIL); catch-ups and publications go on meanwhile."""
        self.store.optimize()
        with self._lock:
            self.current = self._publish()
            self.current_seq = self.seq
            self._live.add(self.current)

    def newest(self) -> Path:
        """The current generation, read without the lock (one attribute read): what
        ``/healthz`` says, answered on the server's event loop, never held by a catch-up
        (tests/security/test_163)."""
        return self.current

    def published(self) -> tuple[Path, int]:
        """The current generation and the journal seq it holds (read together)."""
        with self._lock:
            return self.current, self.current_seq

    # --- what the catch-up loop asks of a store: the watermark is kept in memory ----

    def projected_seq(self) -> int:
        return self.seq

    def layout(self) -> int:
        return PROJECTION_VERSION

    def apply(self, batch: QuadBatch, seq: int) -> None:
        write_batch(self.store, batch)
        self.seq = seq

    def replace_all(self, nquads: Iterable[str], retractions: Sequence[str],
                    watermark: Callable[[], int]) -> None:
        raise InputError("the server's private store is never rebuilt in place")

    def retire(self, in_use: set[Path]) -> None:
        """Remove the generations no worker uses, but the newest."""
        if len(self._live) <= 1:
            return
        with self._lock:
            for folder in sorted(self._live - in_use - {self.current}):
                self._live.discard(folder)
                shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()
        self.store.flush()
        del self.store


def _private(workdir: Path) -> tuple[ox.Store, Path]:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "private"
    return ox.Store(str(path)), path


def snapshot_files(files: list[Path], workdir: Path) -> PrivateStore:
    """Parse the given RDF files (named graphs kept) into the server's private store."""
    store, _ = _private(workdir)
    for path in files:
        if not path.is_file():
            raise InputError(f"no RDF file at `{path}`")
        try:
            store.bulk_load(path=str(path), format=rdf_format(path),
                            base_iri=path.resolve().as_uri())
        except SyntaxError as exc:
            raise RdfParseError(str(exc), file=str(path)) from exc
        except (OSError, ValueError) as exc:
            raise RdfParseError(f"cannot read: {exc}", file=str(path)) from exc
    return PrivateStore(workdir, store, 0, None)


def snapshot_home(home: Home, workdir: Path) -> PrivateStore:
    """A checkpoint of the home's embedded graph store if it is free, else (busy, or the
    home's graph is a remote store) the journal projected with the packs' knowledge: the
    server's private store, which then follows the journal. The endpoint never forwards
    a query to a remote store: it answers from this projection of the same journal."""
    from ..packs.hooks import home_knowledge, home_projectors

    try:
        journal = open_home_journal(home.root, must_exist=True)
    except InputError as exc:
        raise InputError(exc.message, hint="run `cradle-kg demo --home ...`, or serve RDF "
                         "files instead") from None
    try:
        projectors = home_projectors(home.root)
        workdir.mkdir(parents=True, exist_ok=True)
        private = workdir / "private"
        try:
            if is_remote(home.root):
                raise InputError("the home's graph is a remote store")
            graph = OxigraphStore(home.graph)
        except CradleError:  # remote, or held by a running runtime: the journal will do
            store = OxigraphStore(private)
            rebuild(store, journal, projectors=projectors)
            install(store, home_knowledge(home.root))
        else:
            try:
                catch_up(graph, journal, projectors=projectors)
                graph.backup(private)
            finally:
                graph.close()
            store = OxigraphStore(private)
        seq = store.projected_seq()
        # the server keeps its seq in memory: the store's meta graph stays out of the queries
        handed = store.detach(drop_meta=True)
    except BaseException:
        journal.close()
        raise
    return PrivateStore(workdir, handed, seq, journal, projectors)
