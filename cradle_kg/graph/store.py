"""The graph store: the journal's RDF projection in an on-disk Oxigraph store.

The store is a projection, never the truth: it records the last journal ``seq`` it has
projected (in a meta graph) and catches up from the journal on :meth:`GraphStore.sync`.
``rebuild`` recreates it from nothing. An on-disk Oxigraph store is opened by one process
at a time; a runtime that finds it busy leaves it to catch up later, which loses nothing
because the journal has every event.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from ..errors import JournalError
from ..journal import Journal
from .project import event_retractions, project_event, run_graph
from .vocab import CRADLE_NS

META_GRAPH = "https://w3id.org/cradle/meta"
_SEQ = f"<{CRADLE_NS}projectedSeq>"
_META = f"<{META_GRAPH}>"

Progress = Callable[[int, int], None]


class GraphStore:
    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        try:
            if read_only:
                self.store = ox.Store.read_only(str(path))
            else:
                path.mkdir(parents=True, exist_ok=True)
                self.store = ox.Store(str(path))
        except OSError as exc:
            raise JournalError(f"cannot open the graph store `{path}`: {exc}",
                               hint="another process may hold it; the journal is intact "
                                    "and `cradle-kg graph rebuild` recreates the graph") from exc

    @classmethod
    def in_memory(cls) -> GraphStore:
        self = cls.__new__(cls)
        self.path = Path(":memory:")
        self.store = ox.Store()
        return self

    def projected_seq(self) -> int:
        for quad in self.store.quads_for_pattern(ox.NamedNode(META_GRAPH), None, None,
                                                 ox.NamedNode(META_GRAPH)):
            if quad.predicate.value == _SEQ[1:-1] and isinstance(quad.object, ox.Literal):
                return int(quad.object.value)
        return 0

    def _retract(self, ev_retractions: list[str]) -> None:
        if ev_retractions:
            self.store.update("DELETE DATA { " + " ".join(ev_retractions) + " }")

    def _load(self, text: str, seq: int, previous: int) -> None:
        meta = f"{_META} {_SEQ} \"{seq}\"^^<http://www.w3.org/2001/XMLSchema#integer> {_META} .\n"
        old = ox.Quad(ox.NamedNode(META_GRAPH), ox.NamedNode(_SEQ[1:-1]),
                      ox.Literal(str(previous), datatype=ox.NamedNode(
                          "http://www.w3.org/2001/XMLSchema#integer")), ox.NamedNode(META_GRAPH))
        self.store.remove(old)
        self.store.load(text + meta, format=ox.RdfFormat.N_QUADS)

    def sync(self, journal: Journal, *, batch: int = 20_000,
             progress: Progress | None = None) -> int:
        """Project every event after the last projected one; returns how many were added."""
        start = self.projected_seq()
        head, _ = journal.head()
        done = 0
        lines: list[str] = []
        last = start
        for ev in journal.events(since_seq=start):
            lines.extend(project_event(ev))
            last = ev.seq
            done += 1
            retract = event_retractions(ev)
            if retract:  # flush what precedes it, so the retraction sees it
                self._load("".join(lines), last, self.projected_seq())
                lines.clear()
                graph = run_graph(ev.run_id)
                self._retract([f"GRAPH {graph} {{ {t} }}" for t in retract])
            if done % batch == 0:
                self._load("".join(lines), last, self.projected_seq())
                lines.clear()
                if progress:
                    progress(last - start, head - start)
        if lines or last != start:
            self._load("".join(lines), last, self.projected_seq())
        if progress:
            progress(last - start, head - start)
        return done

    def rebuild(self, journal: Journal, *, progress: Progress | None = None) -> int:
        """Drop everything and project the whole journal again (bulk loading)."""
        self.store.clear()
        head, _ = journal.head()
        chunk: list[str] = []
        count = 0
        retractions: list[str] = []
        for ev in journal.events():
            chunk.extend(project_event(ev))
            graph = run_graph(ev.run_id)
            retractions.extend(f"GRAPH {graph} {{ {t} }}" for t in event_retractions(ev))
            count += 1
            if len(chunk) >= 200_000:
                self.store.bulk_load("".join(chunk), format=ox.RdfFormat.N_QUADS)
                chunk.clear()
                if progress:
                    progress(ev.seq, head)
        meta = (f"{_META} {_SEQ} \"{head}\"^^<http://www.w3.org/2001/XMLSchema#integer> "
                f"{_META} .\n")
        self.store.bulk_load("".join(chunk) + meta, format=ox.RdfFormat.N_QUADS)
        for start in range(0, len(retractions), 1000):
            self._retract(retractions[start:start + 1000])
        self.store.flush()
        if progress:
            progress(head, head)
        return count

    def run_graphs(self) -> list[str]:
        return sorted(g.value for g in self.store.named_graphs() if g.value != META_GRAPH)

    def nquads(self, *, graphs: Iterable[str] | None = None) -> str:
        """The store as canonical N-Quads: sorted, meta graph left out."""
        wanted = set(graphs) if graphs is not None else None
        lines = []
        for quad in self.store:
            g = quad.graph_name
            name = g.value if isinstance(g, ox.NamedNode) else ""
            if name == META_GRAPH or (wanted is not None and name not in wanted):
                continue
            lines.append(f"{quad} .\n")
        return "".join(sorted(lines))

    def query(self, sparql: str, **kw: Any) -> Any:
        return self.store.query(sparql, use_default_graph_as_union=True, **kw)

    def close(self) -> None:
        self.store.flush()
        del self.store


def remove_store(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
