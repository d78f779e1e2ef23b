"""Query workers: one process per worker, each query run and serialized inside it.

pyoxigraph has no query timeout, and reading a result on another thread than the one
that ran the query aborted the whole process here. So every query is run *and*
serialized on the main thread of a worker process, and the server enforces the timeout
from outside: a worker that overruns is killed and replaced; the server itself never
touches a pyoxigraph result. A worker that dies for any reason is replaced the same way.

Wire format (``multiprocessing`` connections, pickled tuples):

* request  ``Job``  → reply ``("ok", media_type, body)`` or ``("error", status, message)``;
* at start the worker sends ``("ready", triples, sandboxed)`` once its graph is open.

A worker holds no graph in memory: it opens a *generation* of the server's private store
read-only (:mod:`.dataset`), and reopens when a job names a newer one. A worker killed
after a timeout is replaced by one that opens the same generation in milliseconds.

Each worker runs its queries on one thread with a 512 MiB stack (reserved, not used): a
query within the size cap cannot overflow the engine's recursive parser or evaluator,
whatever its shape. With no SERVICE allow-listed, a worker also denies itself every
network socket before it loads anything (:mod:`.sandbox`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing as mp
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import IO, Any, Protocol, cast

import pyoxigraph as ox

from ..errors import QueryError, QueryRefusedError
from ..graph.queries import execute
from ..graph.sparql_guard import MAX_QUERY_BYTES, MAX_QUERY_DEPTH
from ..storage.oxigraph import OxigraphStore
from .negotiation import graph_format, results_format
from .sandbox import deny_network


class Generations(Protocol):
    """What publishes generations (``dataset.PrivateStore``; the server's side only)."""

    current: Path
    triples: int

    def source(self) -> Source: ...

    def latest(self) -> Path: ...

    def retire(self, in_use: set[Path]) -> None: ...

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
        self.generation = str(generation)
        self.store = OxigraphStore(generation, read_only=True)

    def at(self, generation: str | None) -> None:
        if generation is not None and generation != self.generation:
            self.store = OxigraphStore(Path(generation), read_only=True)
            self.generation = generation


def run_job(graph: OpenGraph, job: Job, limits: Limits, *, sandboxed: bool = False) -> Reply:
    """Run one query and serialize its result, on this thread (never hand results over)."""
    max_bytes = limits.max_bytes
    graph.at(job.generation)
    default = list(job.default_graphs) if job.default_graphs is not None else None
    named = list(job.named_graphs) if job.named_graphs is not None else None
    if named is not None and default is None:
        default = []  # a dataset given by named graphs only has an empty default graph
    try:
        result = execute(graph.store, job.query, bound={k: _term(v) for k, v in job.bound},
                         allowed_services=limits.allowed_services, default_graph=default,
                         named_graphs=named, base_iri=job.base_iri,
                         network_sandboxed=sandboxed, max_bytes=limits.max_query_bytes,
                         max_depth=limits.max_query_depth)
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
                                "add a LIMIT or ask for less")
    except (OSError, ValueError, RuntimeError, SyntaxError) as exc:  # evaluation errors
        # the store is a read-only checkpoint: what fails while evaluating is the query
        return Reply.error(400, f"the query failed: {' '.join(str(exc).split())[:500]}")
    charset = "; charset=utf-8" if media.startswith("text/") or "json" in media \
        or "xml" in media else ""
    return Reply(True, 200, media + charset, b"".join(sink.parts))


def worker_main(conn: Connection, source: Source, limits: Limits) -> None:
    """The body of a worker process: deny the network, then serve on a deep-stack thread."""
    sandboxed = deny_network() if not limits.allowed_services else False
    sys.setrecursionlimit(6_000)  # the checker's parser recurses (depth 128 needs ~6000)
    threading.stack_size(QUERY_STACK_BYTES)
    thread = threading.Thread(target=_serve, args=(conn, source, limits, sandboxed),
                              name="cradle-sparql-query")
    thread.start()
    thread.join()


def _serve(conn: Connection, source: Source, limits: Limits, sandboxed: bool) -> None:
    graph = OpenGraph(source.generation)
    conn.send(("ready", source.triples, sandboxed))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = run_job(graph, job, limits, sandboxed=sandboxed)
        except Exception as exc:  # INVARIANT: a worker answers every job it reads
            reply = Reply.error(500, f"the query worker failed: {type(exc).__name__}: {exc}")
        conn.send(reply)


# --- the pool, in the server process ------------------------------------------------------


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    triples: int = 0
    generation: str | None = None


@dataclass
class PoolStats:
    started: int = 0
    killed: int = 0
    ready: int = 0
    triples: int = 0
    #: every worker that reported in is denied the network
    sandboxed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class WorkerPool:
    """A fixed number of worker processes; each job borrows one, or times out."""

    def __init__(self, source: Source | Generations, *, size: int = 2, timeout: float = 10.0,
                 limits: Limits | None = None, start_timeout: float = 600.0) -> None:
        # a private store publishes generations as the journal grows; a Source is fixed
        self.generations = None if isinstance(source, Source) else source
        self.source = source if isinstance(source, Source) else source.source()
        self.size = max(1, size)
        self.timeout = timeout
        self.limits = limits or Limits()
        self.start_timeout = start_timeout
        self.stats = PoolStats()
        self._ctx = mp.get_context("spawn")
        self._idle: list[_Worker] = []
        self._workers: list[_Worker] = []
        self._pending: list[_Worker] = []
        self._cond = threading.Condition()
        self._closed = False
        self._reported = False
        self.threads = ThreadPoolExecutor(max_workers=self.size + 4,
                                          thread_name_prefix="sparql-job")

    def spawn(self) -> None:
        """Start every worker without waiting (they start while the server builds the rest)."""
        if not self._pending:
            self._pending = [self._spawn() for _ in range(self.size)]

    def start(self) -> None:
        """Start every worker (unless :meth:`spawn` did) and wait until each has its graph."""
        self.spawn()
        pending, self._pending = self._pending, []
        for worker in pending:
            self._await_ready(worker)

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        source = self.source
        if self.generations is not None:  # a replacement opens the newest generation
            source = Source(generation=self.generations.current, triples=source.triples)
        process = self._ctx.Process(
            target=worker_main, name="cradle-sparql-worker", daemon=True,
            args=(child, source, self.limits))
        process.start()
        child.close()
        self.stats.started += 1
        worker = _Worker(process, parent, generation=str(source.generation))
        with self._cond:
            self._workers.append(worker)
        return worker

    def _await_ready(self, worker: _Worker) -> None:
        if not worker.conn.poll(self.start_timeout):
            worker.process.kill()
            raise RuntimeError("a query worker did not load its graph in time")
        message = worker.conn.recv()
        worker.triples = int(message[1])
        self.stats.triples = worker.triples if self.generations is None \
            else self.generations.triples
        with self._cond:
            self.stats.sandboxed = bool(message[2]) and (self.stats.sandboxed
                                                         or not self._reported)
            self._reported = True
            self.stats.ready += 1
            self._idle.append(worker)
            self._cond.notify()

    def triples(self) -> int:
        """The quads served (at start; -1 while a big store is still being counted)."""
        return self.stats.triples if self.generations is None else self.generations.triples

    def _replace(self, worker: _Worker) -> None:
        """Kill a worker and start another in the background."""
        self.stats.killed += 1
        with self._cond:
            if worker in self._workers:
                self._workers.remove(worker)
        with contextlib.suppress(Exception):
            worker.process.kill()
            worker.process.join(5)
            worker.conn.close()
        if self._closed:
            return

        def restart() -> None:
            with contextlib.suppress(Exception):
                self._await_ready(self._spawn())

        threading.Thread(target=restart, name="sparql-worker-restart", daemon=True).start()

    @contextlib.contextmanager
    def _borrow(self, deadline: float) -> Iterator[_Worker | None]:
        with self._cond:
            while not self._idle and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            worker = self._idle.pop() if self._idle else None
            if worker is not None:
                self.stats.ready -= 1
        yield worker

    def _give_back(self, worker: _Worker) -> None:
        with self._cond:
            self.stats.ready += 1
            self._idle.append(worker)
            self._cond.notify()

    def run(self, job: Job, *, timeout: float | None = None) -> Reply:
        """Run a job on a worker (blocking); the timeout covers waiting and running."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        with self._borrow(deadline) as worker:
            if worker is None:
                return Reply.error(503, f"no query worker was free within {limit:g} s: "
                                        "the endpoint is busy")
            if self.generations is not None:
                try:
                    latest = str(self.generations.latest())
                except Exception as exc:  # the journal or the private store failed
                    self._give_back(worker)
                    return Reply.error(500, f"the graph could not catch up with the journal: "
                                            f"{type(exc).__name__}: {exc}")
                worker.generation = latest
                job = dataclasses.replace(job, generation=latest)
            try:
                worker.conn.send(job)
                if not worker.conn.poll(max(0.0, deadline - time.monotonic())):
                    self._replace(worker)
                    return Reply.error(503, f"the query ran longer than the {limit:g} s limit "
                                            "and was stopped")
                reply: Reply = worker.conn.recv()
            except (EOFError, OSError, BrokenPipeError):
                self._replace(worker)
                return Reply.error(500, "the query worker died; it has been replaced")
            self._give_back(worker)
            if self.generations is not None:
                self._retire()
            return reply

    def _retire(self) -> None:
        with self._cond:
            in_use = {Path(w.generation) for w in self._workers if w.generation}
        self.generations.retire(in_use)  # type: ignore[union-attr]

    async def arun(self, job: Job, *, timeout: float | None = None) -> Reply:
        import asyncio

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.threads, lambda: self.run(job, timeout=timeout))

    def close(self) -> None:
        with self._cond:
            self._closed = True
            workers, self._idle = self._idle + self._pending, []
            self._pending = []
            self._cond.notify_all()
        for worker in workers:
            with contextlib.suppress(Exception):
                worker.conn.close()
                worker.process.kill()
                worker.process.join(5)
        self.threads.shutdown(wait=False, cancel_futures=True)
