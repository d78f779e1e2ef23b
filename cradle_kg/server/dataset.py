"""What the query workers read: an N-Quads snapshot, then the journal as it grows.

An on-disk Oxigraph store is opened read-write by one process at a time, and opening it
read-only while another process writes is undefined behaviour. So no worker opens the
home's store. Instead:

* the server, at start, writes a **snapshot** — the home's graph as N-Quads (from the
  on-disk store when it is free, brought up to the journal first; else left empty) —
  or, when serving files, the files parsed and merged into one N-Quads file;
* each worker bulk-loads the snapshot into its own in-memory store, then **catches up
  from the journal** (SQLite, which many processes may read) before every query, with
  the same pure projection the runtime uses. Same journal, same triples: a worker's
  graph equals the home's graph at the journal head.

A worker started later (after a timeout killed one) loads the same snapshot and
catches up the same way. The meta graph (the projected seq) stays out of the workers'
stores: a worker keeps its seq in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pyoxigraph as ox

from ..errors import CradleError, InputError, RdfParseError
from ..graph.project import event_retractions, project_event, run_graph
from ..graph.store import META_GRAPH, GraphStore
from ..home import Home
from ..journal import Journal

_EXTENSIONS: Final = {".ttl": ox.RdfFormat.TURTLE, ".turtle": ox.RdfFormat.TURTLE,
                      ".trig": ox.RdfFormat.TRIG, ".nq": ox.RdfFormat.N_QUADS,
                      ".nquads": ox.RdfFormat.N_QUADS, ".nt": ox.RdfFormat.N_TRIPLES,
                      ".ntriples": ox.RdfFormat.N_TRIPLES, ".jsonld": ox.RdfFormat.JSON_LD,
                      ".json": ox.RdfFormat.JSON_LD}


@dataclass(frozen=True)
class Source:
    """Everything a worker needs to build its graph (picklable, sent to each worker)."""

    snapshot: Path | None
    snapshot_seq: int
    journal: Path | None


def rdf_format(path: Path) -> ox.RdfFormat:
    try:
        return _EXTENSIONS[path.suffix.lower()]
    except KeyError:
        raise RdfParseError(f"cannot tell the RDF format of extension `{path.suffix}`",
                            file=str(path),
                            hint="use .ttl .trig .nt .nq .jsonld") from None


def snapshot_files(files: list[Path], out: Path) -> Source:
    """Parse the given RDF files (named graphs kept) into one N-Quads snapshot."""
    store = ox.Store()
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
    store.dump(str(out), format=ox.RdfFormat.N_QUADS)
    return Source(snapshot=out, snapshot_seq=0, journal=None)


def snapshot_home(home: Home, out: Path) -> Source:
    """Snapshot the home's graph store if it is free; workers catch up from the journal."""
    if not home.journal.exists():
        raise InputError(f"no journal at `{home.journal}`",
                         hint="run `cradle-kg demo --home ...`, or serve RDF files instead")
    try:
        graph = GraphStore(home.graph)
    except CradleError:  # held by a running runtime: the journal alone will do
        return Source(snapshot=None, snapshot_seq=0, journal=home.journal)
    try:
        with Journal(home.journal) as journal:
            if graph.projected_seq() < journal.head()[0]:  # the packs' hooks project too
                from ..packs.hooks import home_projectors

                graph.projectors = home_projectors(home.root)
            graph.sync(journal)
        seq = graph.projected_seq()
        graph.store.dump(str(out), format=ox.RdfFormat.N_QUADS)  # the meta graph goes too
    finally:
        graph.close()
    return Source(snapshot=out, snapshot_seq=seq, journal=home.journal)


class LiveGraph:
    """A worker's in-memory graph: the snapshot, kept up to the journal's head."""

    def __init__(self, source: Source) -> None:
        self.store = ox.Store()
        if source.snapshot is not None:
            self.store.bulk_load(path=str(source.snapshot), format=ox.RdfFormat.N_QUADS)
            # the worker keeps its seq in memory: the store's meta graph stays out
            self.store.remove_graph(ox.NamedNode(META_GRAPH))
        self.seq = source.snapshot_seq
        self.journal = Journal(source.journal) if source.journal is not None else None
        self.refresh()

    def refresh(self) -> int:
        """Project the events appended since the last refresh; returns how many."""
        if self.journal is None:
            return 0
        head, _ = self.journal.head()
        if head <= self.seq:
            return 0
        lines: list[str] = []
        done = 0
        last = self.seq
        for ev in self.journal.events(since_seq=self.seq):
            lines.extend(project_event(ev))
            retract = event_retractions(ev)
            if retract:  # what precedes the retraction must be in before it applies
                self._load(lines)
                graph = ox.NamedNode(run_graph(ev.run_id)[1:-1])
                for line in retract:
                    for triple in ox.parse(line + " .", format=ox.RdfFormat.N_TRIPLES):
                        self.store.remove(ox.Quad(triple.subject, triple.predicate,
                                                  triple.object, graph))
            last = ev.seq
            done += 1
        self._load(lines)
        # INVARIANT: the seq moves only after its events' quads and retractions are in (a
        # failure half-way leaves it behind, and replaying is harmless)
        self.seq = last
        return done

    def _load(self, lines: list[str]) -> None:
        if lines:
            self.store.load("".join(lines), format=ox.RdfFormat.N_QUADS)
            lines.clear()

    def __len__(self) -> int:
        return len(self.store)
