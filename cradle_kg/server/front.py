"""The query front: worker processes that answer ``/sparql`` and ``/queries/NAME`` on the
server's own listening socket — nothing between a client and the engine but one process.

Each worker accepts connections on a listening socket of its own, bound to the server's
address with ``SO_REUSEPORT`` (the kernel spreads the connections over them) and speaks HTTP
itself (uvicorn, no web framework): a ``/sparql`` request is planned by
:func:`.plan.plan`, run and serialized by pyoxigraph on the worker's one query thread
(which has a deep stack), and answered. Everything else — the JSON API, the web page,
``/healthz``, ``/docs``, a CORS preflight — is passed on, as it came, to the app, which
listens on a Unix socket in the server's private work folder.

What stays as it was:

* the body cap and the security headers wrap every answer (:mod:`.guard`), the SERVICE
  guard, nesting and size caps run on every query text (:func:`.worker.run_job`), the
  result cap stops the serializer, and with no SERVICE allow-listed the worker denies
  itself every network socket before it opens anything (:mod:`.sandbox`) — accepting a
  connection on a socket it was given is no new socket;
* a runaway query: pyoxigraph cannot cancel one, so the worker that runs it goes. A
  worker runs its queries on a few threads (each with a 512 MiB stack, reserved not used;
  :attr:`FrontConfig.threads` at once): the engine releases the GIL while it evaluates
  and serializes, so they run in parallel, and the worker's watchdog thread runs
  meanwhile: at the deadline it stops accepting, shuts down its other clients' connections
  (a client's next query then goes to a new connection, not into a process about to end),
  writes the 503 on the query's connection itself (and a
  503 "send it again" on those running or waiting beside it) and ends the process,
  leaving the slot's listening socket (the supervisor's) to queue the connections that
  arrive meanwhile. The supervisor starts a replacement on that socket, which opens the
  current generation (a checkpoint) read-only, in milliseconds — no reload — and kills a
  worker whose query overran the deadline by :data:`GRACE_SECONDS` (one that could not stop itself);
* memory: the watchdog gives the heap the query threads freed back to the system, once a
  second at most (:class:`HeapTrim`), and ends the worker as at a deadline when its own
  resident memory passes :attr:`FrontConfig.max_worker_bytes` while queries run (the 503
  says so); answers its clients left unread are bounded (:data:`UNREAD_RESULTS`);
* freshness: before each query the worker looks at the journal. An embedded (SQLite)
  journal it reads itself (``data_version``: a few microseconds, no round trip); any
  other journal it asks the supervisor about. When events arrived, the supervisor
  catches its private store up and publishes a generation, which the worker reopens:
  a query sees the journal as it was when it arrived, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl

from ..errors import CradleError
from ..graph.queries import QueryCatalog
from ..storage.sqlite_watch import JournalWatch
from ..tls import tls_context
from .deadlines import HEADER_SECONDS, request_deadlines
from .guard import HEADERS, BodyLimit, Message, Receive, Scope, SecurityHeaders, Send
from .hosts import allowed_host
from .plan import named_job, plan, service_description
from .readers import CHALLENGE, GraphReaders
from .sandbox import deny_network
from .worker import QUERY_STACK_BYTES, Job, Limits, OpenGraph, Reply, run_job

#: how long past its deadline a query may run before the supervisor kills its worker
GRACE_SECONDS: Final = 5.0
#: hop-by-hop headers: never passed on between the client and the app
_HOP: Final = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"te",
                         b"upgrade", b"proxy-connection", b"content-length", b"trailer"})
_HOP_BACK: Final = frozenset({b"connection", b"keep-alive", b"transfer-encoding",
                              b"server", b"date"})
REPLACED: Final = ("the query worker was replaced while this query ran (another query "
                   "overran its limit): send the query again")
#: where the connection's socket is put in the scope
_FD: Final = "cradle.socket_fd"
#: how long an ending worker waits for its event loop to stop accepting
STOP_ACCEPTING_SECONDS: Final = 0.5
#: the resident memory a worker may hold while it runs queries (``--max-worker-memory``):
#: the engine builds strings and sorts in memory, and a query of a few KB grew a worker
#: by GBs within its time limit (tests/security/test_448)
MAX_WORKER_BYTES: Final = 2 * 1024 * 1024 * 1024
#: how many results at the cap (``--max-result-bytes``) a worker's clients may leave
#: unread at once: past it, the next query is a 503 until they read or are cut off
#: (:data:`.deadlines.MIN_SEND_RATE`; tests/security/test_449)
UNREAD_RESULTS: Final = 4


@dataclass(frozen=True)
class FrontConfig:
    """What every worker is given (picklable)."""

    limits: Limits
    timeout: float
    #: the app's Unix socket (everything but queries is passed on to it)
    app_socket: str
    max_body_bytes: int
    #: a home: the graph follows its journal; an embedded journal's file, read here
    follows: bool = False
    journal: str | None = None
    query_dirs: tuple[Path, ...] = ()
    pack_queries: dict[str, dict[str, Path]] = field(default_factory=dict)
    cors_origins: tuple[str, ...] = ()
    federated: bool = False
    #: queries a worker runs at once, each on a thread of its own
    threads: int = 4
    #: seconds a client has to send a request's headers (:mod:`.deadlines`)
    header_seconds: float = HEADER_SECONDS
    #: the names a request's ``Host`` may give (empty: any; :func:`allowed_host`)
    allowed_hosts: tuple[str, ...] = ()
    #: who may read the graph (:mod:`.readers`)
    readers: GraphReaders = field(default_factory=GraphReaders)
    #: resident bytes a worker may hold while it runs queries: past it, its queries are
    #: answered 503 and it ends (replaced), as at a deadline (:meth:`QueryWorker._watch`)
    max_worker_bytes: int = MAX_WORKER_BYTES


@dataclass(frozen=True)
class Start:
    """Which slot a worker fills and the generation it opens first."""

    slot: int
    generation: str
    seq: int


@dataclass
class _Running:
    job: Job
    deadline: float
    #: the connection's socket (to answer 503 on), and the CORS headers of the request
    fd: int | None
    cors: Sequence[tuple[bytes, bytes]]


class _CatchUpFailed(Exception):
    """The supervisor's catch-up raised: ``kind`` is its exception's kind (its text is in
    the server's log)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def logged_kind(what: str, exc: BaseException) -> str:
    """``exc``'s kind, its text written to the server's log (stderr).

    INVARIANT: an error's text is the operator's, never a client's: it may name the
    server's private folder (``No space left on device: '/tmp/cradle-serve-…'``) or the
    journal's database host, port and user. Before, ``/sparql`` answered it whole to any
    caller (tests/security/test_481), as ``/healthz`` once did the compaction's
    (``test_176``)."""
    kind = type(exc).__name__
    with contextlib.suppress(OSError, ValueError):
        print(f"cradle-kg serve: {what}: {kind}: {exc}", file=sys.stderr, flush=True)
    return kind


class QueryWorker:
    """One worker: an ASGI app over its graph, its journal watch and its watchdog."""

    def __init__(self, config: FrontConfig, start: Start, ask: Connection, busy: Any,
                 replaced: Any, published: Any, *, sandboxed: bool) -> None:
        self.config = config
        self.slot = start.slot
        self.generation = start.generation
        self.seq = start.seq
        self.ask = ask
        self.busy = busy
        self.replaced = replaced
        #: the supervisor's count of generations it published unasked (a compaction's),
        #: and the count when this worker last asked for the newest — none at start: the
        #: count read now may have moved since the supervisor read this worker's generation
        #: (its first query asks once; tests/security/test_164)
        self.published = published
        self.epoch = -1
        self.sandboxed = sandboxed
        threads = max(1, config.threads)
        threading.stack_size(QUERY_STACK_BYTES)  # the query threads': reserved, not used
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="cradle-sparql-query")
        started = threading.Barrier(threads + 1)  # the pool starts threads lazily: all now,
        for _ in range(threads):                 # while the deep stack size is in force
            self.executor.submit(started.wait)
        started.wait()
        threading.stack_size(0)
        self.graph = OpenGraph(Path(start.generation))
        self.journal = JournalWatch(config.journal) if config.journal else None
        #: the journal's mark at the last look that left this worker with every event it
        #: saw; none at start: the events journaled between the supervisor's reading of the
        #: generation and this process's start are looked for by the first query
        #: (tests/security/test_164)
        self.mark = -1
        self.catalog = QueryCatalog.load(config.query_dirs, packs=config.pack_queries)
        self.lock = threading.Lock()
        self.running: dict[int, _Running] = {}
        self.waiting: dict[int, _Running] = {}
        self.fresh_lock = threading.Lock()
        self.proxy: Any = None
        self.cors_any = "*" in config.cors_origins
        #: queries answered (the heap is trimmed when it moved)
        self.answered = 0
        self.heap = HeapTrim(_malloc_trim())
        #: the port the worker accepts on (its clients' connections are the sockets on it),
        #: its HTTP server and the server's event loop (set by :func:`_serve` and the first
        #: request): what :meth:`_stop_accepting` stops
        self.port: int | None = None
        self.http: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread = 0
        #: requests whose headers arrived and which are not answered yet, and the client
        #: connections open (counted by the HTTP protocol, :func:`_serve`): a query alone
        #: in the worker, from its only client, runs on the loop's thread — no other
        #: client waits behind it (inlining whenever a query was alone, with 8 clients:
        #: 3.34-4.32 ms CPU a query against the base tree's 2.66-3.60; with this rule
        #: 2.54-2.85 against 3.10-3.62, alternated at load 7)
        self.pending = 0
        self.connections = 0
        #: the clients' connections (their transports): what their answers left unsent
        self.transports: set[asyncio.Transport] = set()
        threading.Thread(target=self._watch, name="cradle-watchdog", daemon=True).start()

    def _fresh(self) -> str:
        """The generation that holds every event in the journal now (and the newest
        compaction's, once one was published)."""
        if not self.config.follows and int(self.published[0]) == self.epoch:
            return self.generation
        with self.fresh_lock:  # one look at a time: a look that saw new events is done
            return self._look()

    def _look(self) -> str:
        # INVARIANT: the mark and the compaction's count are kept only once this worker
        # holds a generation with what they saw: a look that failed (the head unread, the
        # supervisor's catch-up raised) is looked at again by the next query, never taken
        # for "nothing new" (tests/security/test_160)
        epoch = int(self.published[0])
        mark = self.journal.watermark() if self.journal is not None else self.mark
        if epoch == self.epoch and self.journal is not None:
            if mark == self.mark:
                return self.generation
            if self.journal.head_seq() <= self.seq:
                self.mark = mark
                return self.generation
        elif epoch == self.epoch and not self.config.follows:
            return self.generation
        # the answer holds the journal's events up to the mark (read before the ask)
        self.ask.send(("latest",))
        answer = self.ask.recv()
        if answer[0] == "error":  # the supervisor logged its text: its kind only here
            raise _CatchUpFailed(str(answer[1]))
        self.generation, self.seq = str(answer[0]), int(answer[1])
        self.mark, self.epoch = mark, epoch
        return self.generation

    def execute(self, job: Job, scope: Scope, cors: Sequence[tuple[bytes, bytes]]) -> Reply:
        """Run one job on this query thread; the watchdog ends the process if it overruns."""
        started = time.monotonic()
        key = threading.get_ident()
        with self.lock:
            self.waiting.pop(id(job), None)
            self.running[key] = _Running(job, started + self.config.timeout,
                                         scope.get(_FD), cors)
            self.busy[self.slot] = min(r.deadline for r in self.running.values()) \
                - self.config.timeout
        try:
            try:
                generation = self._fresh()
            except Exception as exc:  # the journal or the supervisor failed
                kind = exc.kind if isinstance(exc, _CatchUpFailed) else \
                    logged_kind("the graph could not catch up with the journal", exc)
                return Reply.error(500, "the graph could not catch up with the journal "
                                        f"({kind}); the server's log says why")
            newest = self.generation
            if generation != newest and not os.path.isdir(generation):
                # removed since this thread looked: another thread was told a newer one,
                # which the slot records (never removed) and which holds every event the
                # older did (tests/security/test_162)
                generation = newest
            try:
                return run_job(self.graph, dataclasses.replace(job, generation=generation),
                               self.config.limits, sandboxed=self.sandboxed)
            except Exception as exc:  # INVARIANT: every job gets an answer
                kind = logged_kind("the query worker failed", exc)
                return Reply.error(500, f"the query worker failed ({kind}); the server's "
                                        "log says why")
        finally:
            with self.lock:  # past this point the watchdog cannot answer for this job
                del self.running[key]
                self.answered += 1
                self.busy[self.slot] = min((r.deadline for r in self.running.values()),
                                           default=self.config.timeout) - self.config.timeout

    def _watch(self) -> None:
        """At a query's deadline: answer 503 on its connection — and on those of the
        queries running beside it in this process — then end the process."""
        while True:
            time.sleep(0.05)
            self.heap.tick(self.answered, bool(self.running))
            with self.lock:
                now = time.monotonic()
                # INVARIANT: a worker's memory is bounded as its queries' time is: the
                # engine evaluates in memory (a string doubled by CONCAT, squared by
                # REPLACE), and no cap on the query's text or its result bounds that
                # (tests/security/test_448)
                grown = bool(self.running) and resident_bytes() > self.config.max_worker_bytes
                if not grown and not any(now >= r.deadline for r in self.running.values()):
                    continue
                self.replaced[self.slot] += 1  # this slot's entry: one writer at a time
                # the listening socket is left as it is: the supervisor holds it, and the
                # connections that queue on it meanwhile are the replacement's to answer
                answered = [*self.running.values(), *self.waiting.values()]
                # INVARIANT: no new connection is accepted, and the other clients'
                # connections are closed, before any 503 is written: a client told of the
                # runaway must not find a connection to this process, old or new
                # (tests/server/test_worker_end.py)
                if self.loop_thread not in self.running:  # else the loop is stuck: accepts none
                    self._stop_accepting()
                close_connections(self.port, {r.fd for r in answered if r.fd is not None})
                for running in answered:
                    if grown and running.deadline != float("inf"):  # running, not waiting
                        text = ("the query worker's memory grew past the "
                                f"{self.config.max_worker_bytes} byte cap while this query "
                                "ran, and it was stopped (`--max-worker-memory`): ask for "
                                "less (shorter strings, a LIMIT), or send it again if "
                                "another query was the cause")
                    elif now >= running.deadline:
                        text = (f"the query ran longer than the {self.config.timeout:g} s "
                                "limit and was stopped")
                    else:
                        text = REPLACED
                    _answer_raw(running, text.encode())
                _end()  # the lock is never released: no other answer

    def _stop_accepting(self) -> None:
        """Close this process's copy of the slot's listening socket, on the event loop
        (the supervisor's copy stays open and queues for the replacement); waits a moment
        for it — not for ever: a loop that waits for the watchdog's lock cannot accept."""
        loop, http = self.loop, self.http
        if loop is None or http is None:
            return
        done = threading.Event()

        def stop() -> None:
            for server in getattr(http, "servers", ()):
                server.close()
            done.set()

        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing accepts
            loop.call_soon_threadsafe(stop)
            done.wait(STOP_ACCEPTING_SECONDS)

    async def run(self, job: Job, scope: Scope, cors: Sequence[tuple[bytes, bytes]]) -> Reply:
        """Run a job on a query thread (the engine releases the GIL: they run in parallel)."""
        if self.connections == 1 and self.pending == 1 and not self.running \
                and not self.waiting:
            return self.execute(job, scope, cors)  # alone: here, on the loop's (deep) stack
        with self.lock:  # waiting for a thread: answered by the watchdog if the worker goes
            self.waiting[id(job)] = _Running(job, float("inf"), scope.get(_FD), cors)
        return await asyncio.wrap_future(self.executor.submit(self.execute, job, scope, cors))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
            self.loop_thread = threading.get_ident()
        refused = allowed_host(scope, self.config.allowed_hosts)
        if refused is not None:
            await self._answer(send, 421, "text/plain; charset=utf-8", refused.encode(), [])
            return
        path, method = scope["path"], scope["method"]
        name = path[len("/queries/"):] if path.startswith("/queries/") else ""
        sparql = path == "/sparql" and method in ("GET", "POST")
        named = bool(name) and "/" not in name and method in ("GET", "HEAD")
        if (sparql or named) and not self.config.readers.open:
            refused = self.config.readers.refusal(_header(scope, b"authorization"))
            if refused is not None:  # before the body or the query is read
                await self._answer(send, 401, "text/plain; charset=utf-8", refused.encode(),
                                   [(b"www-authenticate", CHALLENGE.encode())])
                return
        if sparql or named:
            # INVARIANT: the answers this worker's clients left unread are bounded, as the
            # request bodies it holds are: a client that reads none cannot have it hold
            # one result after another (tests/security/test_449)
            unread = sum(t.get_write_buffer_size() for t in self.transports)
            cap = UNREAD_RESULTS * self.config.limits.max_bytes
            if unread > cap:
                await self._answer(
                    send, 503, "text/plain; charset=utf-8",
                    (f"this query worker holds {unread} bytes of answers its clients have "
                     f"not read (over {cap}): send the query again in a moment").encode(),
                    [(b"retry-after", b"1"), *self._cors(dict(scope["headers"]))])
                return
        if sparql:
            await self.sparql(scope, receive, send)
            return
        if named:
            await self.named(name, scope, send)
            return
        await self.forward(scope, receive, send)

    def _cors(self, headers: dict[bytes, bytes]) -> list[tuple[bytes, bytes]]:
        origin = headers.get(b"origin")
        if origin is None:
            return []
        if self.cors_any:
            return [(b"access-control-allow-origin", b"*")]
        if origin.decode("latin-1") in self.config.cors_origins:
            return [(b"access-control-allow-origin", origin), (b"vary", b"Origin")]
        return []

    async def _answer(self, send: Send, status: int, media: str, body: bytes,
                      extra: Sequence[tuple[bytes, bytes]]) -> None:
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", media.encode("latin-1")),
            (b"content-length", str(len(body)).encode()), *extra]})
        await send({"type": "http.response.body", "body": body})

    async def sparql(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        body = b""
        if scope["method"] == "POST":
            message = await receive()  # the body cap buffered it: one message
            body = message.get("body", b"")
        accept = headers.get(b"accept")
        accept_text = accept.decode("latin-1") if accept is not None else None
        endpoint = _endpoint(scope, headers)
        cors = self._cors(headers)
        what = plan(scope["method"], scope["query_string"].decode("latin-1"),
                    headers.get(b"content-type", b"").decode("latin-1"), body, accept_text,
                    endpoint)
        if isinstance(what, Job):
            reply = await self.run(what, scope, cors)
            await self._answer(send, reply.status, reply.media_type, reply.body, cors)
        elif what[0] == "describe":
            try:
                doc, media = service_description(endpoint, accept_text, list(what[1]),
                                                 federated=self.config.federated)
            except ValueError as exc:
                await self._answer(send, 400, "text/plain; charset=utf-8",
                                   f"the endpoint URL is not an IRI: {exc}".encode(), cors)
                return
            if media.startswith("text/"):
                media += "; charset=utf-8"
            await self._answer(send, 200, media, doc, cors)
        else:
            await self._answer(send, int(what[0]), "text/plain; charset=utf-8",
                               str(what[1]).encode("utf-8"), cors)

    async def named(self, name: str, scope: Scope, send: Send) -> None:
        headers = dict(scope["headers"])
        params = dict(parse_qsl(scope["query_string"].decode("latin-1"),
                                keep_blank_values=True))
        cors = self._cors(headers)
        accept = headers.get(b"accept")
        try:
            job = named_job(self.catalog, name, params,
                            accept.decode("latin-1") if accept else None)
        except CradleError as exc:
            status = 404 if exc.code == "unknown_name" else 400
            await self._answer(send, status, "text/plain; charset=utf-8",
                               exc.message.encode("utf-8"), cors)
            return
        reply = await self.run(job, scope, cors)
        await self._answer(send, reply.status, reply.media_type, reply.body, cors)

    async def forward(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass a request on to the app (its Unix socket) and its answer back."""
        import httpx  # only a worker that forwards something pays for it

        if self.proxy is None:
            self.proxy = httpx.AsyncClient(
                transport=httpx.AsyncHTTPTransport(uds=self.config.app_socket,
                                                   verify=tls_context()),
                timeout=httpx.Timeout(None, connect=5.0))
        message: Message = await receive()  # the body cap buffered it: one message
        target = scope.get("raw_path") or scope["path"].encode("utf-8")
        if scope["query_string"]:
            target += b"?" + scope["query_string"]
        request = self.proxy.build_request(
            scope["method"], "http://app" + target.decode("latin-1"),
            headers=[(k, v) for k, v in scope["headers"] if k not in _HOP],
            content=message.get("body", b""))
        deadline = time.monotonic() + 30.0
        while True:
            try:
                response = await self.proxy.send(request, stream=True)
                break
            except (httpx.ConnectError, FileNotFoundError):
                if time.monotonic() > deadline:  # the app never came up
                    await self._answer(send, 503, "text/plain; charset=utf-8",
                                       b"the server is still starting", [])
                    return
                await asyncio.sleep(0.05)  # the app is still starting
        try:
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [(k, v) for k, v in response.headers.raw
                                    if k.lower() not in _HOP_BACK]})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()


def _raw_503(text: bytes, cors: Sequence[tuple[bytes, bytes]] = ()) -> bytes:
    head = [b"HTTP/1.1 503 Service Unavailable", b"content-type: text/plain; charset=utf-8",
            b"content-length: " + str(len(text)).encode(), b"connection: close",
            *(k + b": " + v for k, v in (*HEADERS, *cors))]
    return b"\r\n".join(head) + b"\r\n\r\n" + text


def _answer_raw(running: _Running, text: bytes) -> None:
    """A 503 written straight on a query's connection (from the watchdog thread)."""
    if running.fd is None:
        return
    with contextlib.suppress(OSError):
        os.write(running.fd, _raw_503(text, running.cors))


def _endpoint(scope: Scope, headers: dict[bytes, bytes]) -> str:
    """The request's URL without query (as Starlette builds it): the base IRI."""
    path = scope.get("root_path", "") + scope["path"]
    host = headers.get(b"host")
    if host is not None:
        return f"{scope['scheme']}://{host.decode('latin-1')}{path}"
    server = scope.get("server") or ("127.0.0.1", 80)
    return f"{scope['scheme']}://{server[0]}:{server[1]}{path}"


class HeapTrim:
    """Give a worker's freed heap memory back to the system when it falls idle.

    The engine allocates on the query threads; glibc keeps what they free in per-thread
    arenas, so after the bench's loads a worker held 150-180 MB resident, 110-130 MB once
    trimmed (``bench/bench_endpoint.py``'s store). ``malloc_trim`` returns the free pages
    (4-6 ms on the watchdog thread), and the pages the next queries allocate are faulted
    in again: trimmed once a second under load, a worker spent 1.5-3.4 ms more CPU per
    query at 1 client (medians 9.9 and 12.4 against 8.4 and 9.0 ms, alternated). So it
    trims only when the worker has answered queries since its last trim and then a whole
    tick went by with no query answered and none running: a worker under load never
    pays for it, one that pauses gives its memory back within two ticks.
    """

    def __init__(self, trim: Callable[[int], int] | None) -> None:
        self.trim = trim
        self.seen = 0  # queries answered at the last trim
        self.last = 0  # queries answered at the last tick

    def tick(self, answered: int, busy: bool) -> bool:
        """One watchdog tick (``busy``: a query is running); True when the heap was trimmed."""
        idle = answered == self.last and not busy
        self.last = answered
        if self.trim is None or not idle or answered == self.seen:
            return False
        self.seen = answered
        self.trim(0)
        return True


_PAGE_BYTES: Final = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int:
    """This process's resident memory of its own (anonymous: the heap, what the engine
    allocates), in bytes — not the pages of files it maps, which the system can drop — read
    from ``/proc/self/statm`` (resident less shared); 0 where there is none to read (the
    cap is then not enforced)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            fields = statm.read().split()
        return (int(fields[1]) - int(fields[2])) * _PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return 0


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None (another C library)."""
    import ctypes

    try:
        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def close_connections(port: int | None, keep: set[int]) -> None:
    """Shut down this process's client connections on ``port`` but those in ``keep``.

    Before a worker ends: a client whose keep-alive connection was idle in this worker
    would otherwise send its next request on it after the runaway's 503 came back (a
    client library reuses a pooled connection that shows no end), and the process's end
    then resets it — "connection reset by peer" for a query that had nothing to do with
    the runaway. Shut down first, the connection shows its end at once (both ways, before
    the runaway's 503 is written): the client opens a new one, which the slot's socket
    queues for the replacement. A connection whose request the worker has not read yet
    (its event loop was running the runaway itself, or had not got to it) is answered the
    503 "send it again" first; one still on its way is lost as before.
    Sockets are found in ``/proc/self/fd``: TCP sockets with a peer whose own port is the
    server's (the listening socket has no peer; the app's and the supervisor's are Unix
    sockets)."""
    if port is None:
        return
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return
    for fd in fds:
        if fd in keep:
            continue
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            conn = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        with conn, contextlib.suppress(OSError):
            if conn.family not in (socket.AF_INET, socket.AF_INET6) \
                    or conn.type != socket.SOCK_STREAM or conn.getsockname()[1] != port:
                continue
            conn.getpeername()  # raises for the listening socket: not a connection
            try:  # a request the loop has not read (it ran a query itself meanwhile)
                sent = conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except BlockingIOError:
                sent = b""
            if sent:  # answered "send it again", as a query waiting for a thread is
                conn.send(_raw_503(REPLACED.encode()))
            conn.shutdown(socket.SHUT_RDWR)


def _end() -> None:
    """End this process at once: no clean-up, no waiting for the running queries."""
    os.kill(os.getpid(), signal.SIGKILL)


def _orphaned(life: Connection) -> None:
    """Exit when the supervisor goes (its end of the pipe closes)."""
    with contextlib.suppress(EOFError, OSError):
        life.recv()
    _end()


def _header(scope: Scope, name: bytes) -> str | None:
    """A request header's value (the first), or None."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class _Socket:
    """Outermost: put the connection's socket in the scope (uvicorn's ``send`` knows its
    transport), so that the watchdog can answer on it while the loop waits."""

    def __init__(self, app: Any, worker: QueryWorker) -> None:
        self.app = app
        self.worker = worker

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        cycle: Any = getattr(send, "__self__", None)
        transport = getattr(cycle, "transport", None)
        held: _HeadHeld | None = None
        try:
            sock = transport.get_extra_info("socket") if transport is not None else None
            if sock is not None:
                scope[_FD] = sock.fileno()
            if transport is not None and scope.get("method") != "HEAD":
                held = _HeadHeld(transport)  # a HEAD answer has no body to join its head to
                cycle.transport = held
            await self.app(scope, receive, send)
        finally:
            if held is not None:
                held.flush()
                cycle.transport = transport
            self.worker.pending -= 1  # counted when its headers arrived (_serve)


class _HeadHeld:
    """A connection's transport for one answer, whose head (uvicorn's first write) is held
    and written with the first bytes of the body: one ``send`` and one TCP segment for a
    query's answer instead of two (the client reads it whole, once); all else is the
    transport's own."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.head: bytes | None = None
        self.done = False

    def write(self, data: bytes) -> None:
        if self.done:
            self.transport.write(data)
        elif self.head is None:
            self.head = bytes(data)
        else:
            self.done = True
            self.transport.write(self.head + data)

    def flush(self) -> None:
        if not self.done and self.head is not None:
            self.transport.write(self.head)
        self.done = True

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def _serve(sock: socket.socket, config: FrontConfig, start: Start, ask: Connection,
           busy: Any, replaced: Any, published: Any, sandboxed: bool) -> None:
    worker = QueryWorker(config, start, ask, busy, replaced, published, sandboxed=sandboxed)
    worker.port = int(sock.getsockname()[1])
    import uvicorn

    class Counted(request_deadlines(config.header_seconds)):  # type: ignore[misc]
        def connection_made(self, transport: asyncio.Transport) -> None:
            worker.connections += 1
            self.counted = transport  # (the protocol's own is a wrapper: deadlines.py)
            worker.transports.add(transport)
            super().connection_made(transport)

        def connection_lost(self, exc: Exception | None) -> None:
            worker.connections -= 1
            worker.transports.discard(self.counted)
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            cycle = self.cycle
            super().data_received(data)
            if self.cycle is not cycle and self.cycle is not None:  # a request's headers
                worker.pending += 1  # (its app, _Socket, counts it out)

    server = uvicorn.Server(uvicorn.Config(
        _Socket(SecurityHeaders(BodyLimit(worker, max_bytes=config.max_body_bytes)), worker),
        lifespan="off", log_level="warning", access_log=False, ws="none",
        server_header=False, http=Counted))
    worker.http = server
    ask.send(("ready", sandboxed))
    # the event loop runs a query itself when it is the worker's only request (no hand-off
    # to a query thread): so it runs on a thread with the query threads' deep stack, and
    # the signals uvicorn would catch on the main thread end it as uvicorn would
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, server.handle_exit)
    threading.stack_size(QUERY_STACK_BYTES)  # in force when the thread starts
    loop = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="cradle-http")
    loop.start()
    threading.stack_size(0)
    loop.join()


def front_main(sock: socket.socket, config: FrontConfig, start: Start, ask: Connection,
               life: Connection, busy: Any, replaced: Any, published: Any) -> None:
    """The body of a worker process: deny the network, open the graph, serve."""
    sandboxed = deny_network() if not config.limits.allowed_services else False
    sys.setrecursionlimit(6_000)  # the checker's parser recurses (depth 128 needs ~6000)
    threading.Thread(target=_orphaned, args=(life,), name="cradle-orphan",
                     daemon=True).start()
    _serve(sock, config, start, ask, busy, replaced, published, sandboxed)


__all__ = ["GRACE_SECONDS", "MAX_WORKER_BYTES", "FrontConfig", "HeapTrim", "QueryWorker",
           "Start", "front_main"]
