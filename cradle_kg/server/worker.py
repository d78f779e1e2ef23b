"""One query, run and serialized in one place: what a query worker does with a job.

pyoxigraph has no query timeout, and reading a result on another thread than the one
that ran the query aborted the whole process here. So every query is run *and*
serialized on one thread of a worker process (:mod:`.front`), and a worker that overruns
is replaced (:mod:`.supervisor`); the server process never touches a pyoxigraph result.

A worker holds no graph in memory: it opens a *generation* of the server's private store
read-only (:mod:`.dataset`), and reopens when a job names a newer one.

Queries run on a thread with a 512 MiB stack (reserved, not used): a query within the
size cap cannot overflow the engine's recursive parser or evaluator, whatever its shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import pyoxigraph as ox

from ..errors import QueryError, QueryRefusedError
from ..graph.queries import execute
from ..graph.sparql_guard import (
    MAX_QUERY_BYTES,
    MAX_QUERY_DEPTH,
    MAX_QUERY_OPERATORS,
    MAX_QUERY_PATTERNS,
)
from ..storage.oxigraph import OxigraphStore
from .negotiation import graph_format, results_format

#: the stack of the thread that runs queries: deep enough for any query under the size cap
QUERY_STACK_BYTES = 512 * 1024 * 1024

#: ("iri", value) or ("literal", value, datatype IRI or None, language or None)
WireTerm = tuple[Any, ...]


@dataclass(frozen=True)
class Source:
    """What a worker opens first (picklable, sent to each worker): a generation folder."""

    generation: Path
    triples: int


@dataclass(frozen=True)
class Job:
    query: str
    accept: str | None = None
    formats: tuple[str, ...] = ()
    bound: tuple[tuple[str, WireTerm], ...] = ()
    default_graphs: tuple[str, ...] | None = None
    named_graphs: tuple[str, ...] | None = None
    #: relative IRIs in the query resolve against this (the endpoint's URL)
    base_iri: str | None = None
    #: the generation folder to read (set by the pool; the worker reopens when it changes)
    generation: str | None = None


@dataclass(frozen=True)
class Limits:
    """What a worker enforces on each query (picklable, sent to each worker)."""

    max_bytes: int = 50_000_000
    allowed_services: tuple[str, ...] = ()
    max_query_bytes: int = MAX_QUERY_BYTES
    max_query_depth: int = MAX_QUERY_DEPTH
    max_query_patterns: int = MAX_QUERY_PATTERNS
    max_query_operators: int = MAX_QUERY_OPERATORS


@dataclass(frozen=True)
class Reply:
    ok: bool
    status: int
    media_type: str
    body: bytes

    @classmethod
    def error(cls, status: int, message: str) -> Reply:
        return cls(False, status, "text/plain; charset=utf-8", message.encode("utf-8"))


def wire_term(term: ox.NamedNode | ox.Literal) -> WireTerm:
    if isinstance(term, ox.NamedNode):
        return ("iri", term.value)
    return ("literal", term.value, term.datatype.value if term.datatype else None,
            term.language)


def _term(wire: WireTerm) -> ox.NamedNode | ox.Literal:
    if wire[0] == "iri":
        return ox.NamedNode(wire[1])
    if wire[3]:
        return ox.Literal(wire[1], language=wire[3])
    return ox.Literal(wire[1], datatype=ox.NamedNode(wire[2]) if wire[2] else None)


class _CappedBuffer:
    """A byte sink that refuses to grow past the result-size cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.cap:
            raise _TooLarge()
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        return None


class _TooLarge(Exception):
    pass


class OpenGraph:
    """A worker's graph: one generation of the server's private store, opened read-only."""

    def __init__(self, generation: Path) -> None:
        #: the generation and its store, set together (one assignment): a worker's query
        #: threads switch it concurrently (tests/security/test_161)
        self._open: tuple[str, OxigraphStore] = (
            str(generation), OxigraphStore(generation, read_only=True))

    @property
    def generation(self) -> str:
        return self._open[0]

    @property
    def store(self) -> OxigraphStore:
        return self._open[1]

    def at(self, generation: str | None) -> OxigraphStore:
        """The store of ``generation`` (``None``: the one open), opened when it is not the
        one open; a query runs on what this returns, never on what another thread of the
        worker opened since."""
        name, store = self._open
        if generation is None or generation == name:
            return store
        store = OxigraphStore(Path(generation), read_only=True)
        self._open = (generation, store)
        return store


def run_job(graph: OpenGraph, job: Job, limits: Limits, *, sandboxed: bool = False) -> Reply:
    """Run one query and serialize its result, on this thread (never hand results over)."""
    max_bytes = limits.max_bytes
    store = graph.at(job.generation)  # this job's generation, whatever opens meanwhile
    default = list(job.default_graphs) if job.default_graphs is not None else None
    named = list(job.named_graphs) if job.named_graphs is not None else None
    if named is not None and default is None:
        default = []  # a dataset given by named graphs only has an empty default graph
    try:
        result = execute(store, job.query, bound={k: _term(v) for k, v in job.bound},
                         allowed_services=limits.allowed_services, default_graph=default,
                         named_graphs=named, base_iri=job.base_iri,
                         network_sandboxed=sandboxed, max_bytes=limits.max_query_bytes,
                         max_depth=limits.max_query_depth,
                         max_patterns=limits.max_query_patterns,
                         max_operators=limits.max_query_operators)
        sink = _CappedBuffer(max_bytes)
        if isinstance(result, ox.QueryTriples):
            fmt, media = graph_format(job.accept, list(job.formats))
            result.serialize(cast(IO[bytes], sink), format=fmt)
        else:
            rfmt, media = results_format(job.accept, list(job.formats))
            result.serialize(cast(IO[bytes], sink), format=rfmt)
    except QueryRefusedError as exc:
        return Reply.error(403, exc.message)
    except QueryError as exc:
        return Reply.error(400, exc.message)
    except _TooLarge:
        return Reply.error(413, f"the result is larger than the {max_bytes} byte cap: "
                                "add a LIMIT, ask a named query for a page "
                                "(`?limit=N&offset=K`), or ask for less")
    except (OSError, ValueError, RuntimeError, SyntaxError) as exc:  # evaluation errors
        # the store is a read-only checkpoint: what fails while evaluating is the query
        return Reply.error(400, f"the query failed: {' '.join(str(exc).split())[:500]}")
    charset = "; charset=utf-8" if media.startswith("text/") or "json" in media \
        or "xml" in media else ""
    return Reply(True, 200, media + charset, b"".join(sink.parts))
