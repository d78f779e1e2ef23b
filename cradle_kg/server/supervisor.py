"""The server's side of the query front: the listening socket, the workers, the watchdog.

:class:`QueryFront` binds the server's address (a socket per worker, ``SO_REUSEPORT``;
the first before anything else, so a busy port fails at once), starts ``size`` workers
(:mod:`.front`) from a fork server (started first thing, with the workers' modules
imported, before the server opens any store or thread: each worker is then a fork of a
small clean process, ready in milliseconds), and keeps the slots filled:

* a worker that exits — after a runaway query (it answered 503 itself), or for any other
  reason — is replaced by one that opens the current generation read-only: no reload.
  Each slot's listening socket is the server's for its whole life (held here, handed to
  every worker of the slot): connections that arrive while a slot's worker is replaced
  wait in that socket's queue for the next one, never refused (with one worker, a
  socket per worker left the port closed until the replacement had bound a new one);
* a worker whose query runs :data:`~.front.GRACE_SECONDS` past the deadline without it
  having stopped itself is killed (the busy times are in shared memory);
* a worker asks, over its pipe, for the newest generation when the journal moved on:
  the server catches its private store up (:class:`~.dataset.PrivateStore`) and answers;
* once the workers are started, the private store is compacted on a thread of its own
  and a generation of it published (:meth:`~.dataset.PrivateStore.compact`); the
  publication count in shared memory tells each worker to ask for it at its next query.

``/healthz`` (served by the app) reads :meth:`QueryFront.health`.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import multiprocessing.connection as mpc
import socket
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Final

from .dataset import PrivateStore
from .front import GRACE_SECONDS, FrontConfig, Start, front_main, logged_kind
from .worker import Job, Reply

_PRELOAD: Final = ["cradle_kg.server.front", "uvicorn", "uvicorn.protocols.http.auto",
                   "uvicorn.loops.auto"]
#: how long the compaction waits for every worker to be ready before it starts anyway
READY_WAIT_SECONDS: Final = 30.0
#: how long a stopping server waits for a compaction in progress (6 s at 1.4 M quads)
STOP_WAIT_SECONDS: Final = 120.0


def start_fork_server() -> None:
    """Start the workers' fork server now (it imports the workers' modules meanwhile)."""
    from multiprocessing import forkserver

    mp.set_forkserver_preload(_PRELOAD)
    forkserver.ensure_running()


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on the server's address, one per worker: with ``SO_REUSEPORT``
    the kernel spreads the connections over the workers (one shared socket left them
    all to whichever worker woke first)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


@dataclass
class _Slot:
    process: BaseProcess
    conn: Connection
    life: Connection
    generation: str
    #: the slot's count of self-stopped workers when this one started
    stopped_before: int = 0
    ready: bool = False
    sandboxed: bool = False
    counted: bool = False


class QueryFront:
    """Keeps ``size`` query workers accepting on ``sock``."""

    def __init__(self, source: PrivateStore, config: FrontConfig, sock: socket.socket,
                 *, workdir: Path, size: int = 2) -> None:
        self.source = source
        #: the server's private folder (its store, generations, the app's socket)
        self.workdir = workdir
        #: the descriptor holding the lock on the folder's ``owner.pid`` (-1: none), kept
        #: until the folder is removed (:func:`.launch.hold_owner`)
        self.owner = -1
        self.config = config
        #: the first worker's socket (bound first, so a busy port fails before anything)
        self.sock: socket.socket | None = sock
        self.address = sock.getsockname()[:2]
        self.size = max(1, size)
        #: each slot's listening socket, bound once and kept for the server's life
        self._sockets: list[socket.socket | None] = [None] * self.size
        self._ctx = mp.get_context("forkserver")
        self.busy: Any = self._ctx.Array("d", self.size, lock=False)
        #: workers that stopped themselves after a runaway query, per slot (each entry is
        #: written by the slot's one live worker: no lock, so no semaphore to track)
        self.replaced: Any = self._ctx.Array("q", self.size, lock=False)
        #: generations published other than at a worker's request (the compaction's):
        #: a worker that sees this move asks for the newest (one writer: no lock)
        self.published: Any = self._ctx.Array("q", 1, lock=False)
        #: the compaction's state, for ``/healthz``: running, done, or why it failed
        self.compaction = "pending"
        self._killed = 0
        self._slots: list[_Slot | None] = [None] * self.size
        self._lock = threading.Lock()
        #: held while a generation is read for a worker until its slot records it, and
        #: while the generations no slot records are removed: a generation told to a
        #: worker is never removed before it is recorded (tests/security/test_162). Never
        #: held over a catch-up (a removal keeps the current generation, so what is read
        #: after it exists): the watch thread's respawns wait milliseconds at most
        self._told = threading.Lock()
        self._closed = False
        self._monitor: threading.Thread | None = None
        self._compactor: threading.Thread | None = None

    def start(self) -> None:
        for slot in range(self.size):
            self._spawn(slot)
        self._monitor = threading.Thread(target=self._watch, name="cradle-front-watch",
                                         daemon=True)
        self._monitor.start()
        self._compactor = threading.Thread(target=self._compact, name="cradle-compact",
                                           daemon=True)
        self._compactor.start()

    def _compact(self) -> None:
        """Once every worker is ready (the first answers first: the compaction takes a
        core for seconds), compact the private store, then tell the workers a generation
        is out. A failure costs the speed-up only: the workers keep the generation they
        read."""
        deadline = time.monotonic() + READY_WAIT_SECONDS
        while not self._closed and time.monotonic() < deadline:
            with self._lock:
                if all(s is not None and s.ready for s in self._slots):
                    break
            time.sleep(0.05)
        if self._closed:
            return
        self.compaction = "running"
        try:
            self.source.compact()
        except Exception as exc:  # closed meanwhile, disk full: served as it was
            # its kind to `/healthz`, its text (which may name the private folder) to the
            # server's log only (tests/security/test_176)
            self.compaction = f"failed: {type(exc).__name__}"
            print(f"cradle-kg serve: the compaction failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
            return
        self.published[0] += 1
        self.compaction = "done"

    def _spawn(self, slot: int) -> None:
        with self._told:  # the generation it opens is recorded before any removal
            self._start(slot)

    def _start(self, slot: int) -> None:
        parent, child = self._ctx.Pipe()
        life_read, life_write = self._ctx.Pipe(duplex=False)
        generation, seq = self.source.published()
        sock = self._sockets[slot]
        if sock is None:  # the slot's first worker: its socket, kept here from now on
            sock, self.sock = self.sock or listen(*self.address), None
            self._sockets[slot] = sock
        # the slot's busy time was the last worker's: one that ended in a query (a runaway)
        # left its start there, and the watch would kill this one for it
        self.busy[slot] = 0.0
        process = self._ctx.Process(
            target=front_main, name=f"cradle-sparql-{slot}", daemon=True,
            args=(sock, self.config, Start(slot, str(generation), seq), child,
                  life_read, self.busy, self.replaced, self.published))
        process.start()  # the worker gets a copy of the slot's socket: the same queue
        child.close()
        life_read.close()
        entry = _Slot(process, parent, life_write, str(generation),
                      stopped_before=int(self.replaced[slot]))
        with self._lock:
            self._slots[slot] = entry
        threading.Thread(target=self._serve, args=(entry,), name=f"cradle-front-{slot}",
                         daemon=True).start()

    def _serve(self, entry: _Slot) -> None:
        """Answer one worker's messages: it is ready; which generation is the newest."""
        while True:
            try:
                message = entry.conn.recv()
            except (EOFError, OSError):
                return
            if message[0] == "ready":
                entry.ready, entry.sandboxed = True, bool(message[1])
                continue
            try:
                self.source.latest()  # the catch-up: not under the lock (seconds, at worst)
                with self._told:  # read, then recorded for the slot, before any removal
                    generation, seq = self.source.published()
                    entry.generation = str(generation)
            except Exception as exc:  # the journal or the private store failed
                # its text (a private folder, the database host) to the log; its kind
                # to the worker, which answers the client with it (tests/security/test_481)
                kind = logged_kind("the graph could not catch up with the journal", exc)
                with contextlib.suppress(OSError):
                    entry.conn.send(("error", kind))
                continue
            with contextlib.suppress(OSError):
                entry.conn.send((str(generation), seq))
            self._retire()

    def _retire(self) -> None:
        with self._told:
            with self._lock:
                in_use = {Path(s.generation) for s in self._slots if s is not None}
            self.source.retire(in_use)

    def _count(self) -> None:
        self._killed += 1  # only the watch thread counts here

    def _watch(self) -> None:
        """Refill every slot whose worker ended; kill a worker stuck past its deadline."""
        while not self._closed:
            with self._lock:
                live = [(i, s) for i, s in enumerate(self._slots) if s is not None]
            ended = set(mpc.wait([s.process.sentinel for _, s in live], timeout=0.25))
            now = time.monotonic()
            for i, entry in live:
                if self._closed:
                    return
                if entry.process.sentinel in ended:
                    entry.process.join(1)
                    stopped_itself = self.replaced[i] > entry.stopped_before
                    if not stopped_itself and not entry.counted:
                        self._count()  # it died: count it as replaced too
                    with contextlib.suppress(OSError):
                        entry.conn.close()
                        entry.life.close()
                    self._spawn(i)
                    continue
                started = self.busy[i]
                if started and now - started > self.config.timeout + GRACE_SECONDS \
                        and not entry.counted:
                    entry.counted = True
                    self._count()
                    entry.process.kill()

    def health(self) -> dict[str, Any]:
        with self._lock:
            slots = [s for s in self._slots if s is not None]
        ready = [s for s in slots if s.ready and s.process.is_alive()]
        current = str(self.source.newest())  # not under the catch-up's lock
        return {"workers_ready": len(ready), "workers": self.size,
                "triples": self.source.triples,
                "workers_replaced": sum(self.replaced) + self._killed,
                "compaction": self.compaction,
                "generation": Path(current).name,
                "workers_on_generation": sum(s.generation == current for s in ready),
                "network_sandboxed": bool(ready) and all(s.sandboxed for s in ready)}

    async def arun(self, job: Job) -> Reply:
        """The app never runs a query: the workers answer ``/sparql`` in front of it."""
        return Reply.error(503, "queries are answered by the query workers, not the app")

    def close(self) -> None:
        self._closed = True
        with self._lock:
            slots, self._slots = [s for s in self._slots if s is not None], []
        for entry in slots:
            with contextlib.suppress(Exception):
                entry.life.close()
                entry.process.terminate()
        for entry in slots:
            with contextlib.suppress(Exception):
                entry.process.join(3)
                if entry.process.is_alive():
                    entry.process.kill()
                    entry.process.join(2)
        for sock in [self.sock, *self._sockets]:
            if sock is not None:
                sock.close()
        self.sock, self._sockets = None, []
        if self._compactor is not None:  # the store is closed and its folder removed next:
            self._compactor.join(STOP_WAIT_SECONDS)  # not under a compaction (seconds)


__all__ = ["QueryFront", "listen", "start_fork_server"]
