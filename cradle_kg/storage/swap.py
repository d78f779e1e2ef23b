"""The graph store's folder: who may touch it (the lock) and how a rebuild replaces it.

The store lives in ``<home>/graph``. Everything that creates, removes or renames it, or
opens it read-write, first takes an exclusive ``flock`` on ``<home>/graph.lock`` — a file
*next to* the folder, so it outlives every swap of the folder. The lock is not waited
for: a second process is refused in one line (:class:`~cradle_kg.errors.GraphBusyError`,
naming the holder's pid) and loses nothing, since the journal has every event. A runtime
holds the lock for as long as it keeps the store open (from its first graph sync to its
close), exactly as it holds RocksDB's own lock; the kernel drops it when a holder dies.

A rebuild never touches the live folder until it has a complete replacement. Folders
beside it (``G`` = ``graph``, ``B`` = ``graph.building``, ``R`` = ``graph.ready``,
``O`` = ``graph.old``) go through these states, each step one ``rename`` (atomic on
POSIX) or the removal of a folder nobody reads::

    steady      G                 (or nothing yet)
    building    G  + B            B is being written; never read
    ready       G  + R            B complete, flushed, fsynced, renamed to R
    aside       O  + R            G renamed to O
    swapped     G  + O            R renamed to G
    steady      G                 O removed

On every read-write open (under the lock) :func:`settle` finishes an interrupted swap:
``B`` is removed (a half-built store); with ``R`` present the swap is completed (``G``
aside if there, ``R`` in); ``O`` is removed once ``G`` exists, or renamed back to ``G``
when it is the only store left (not reachable by the steps above; done for safety).

# INVARIANT: nothing named graph, graph.building, graph.ready or graph.old is created,
#   renamed or removed, and graph is never opened read-write, without holding graph.lock.
# INVARIANT: graph.ready only ever names a complete store: its watermark was written
#   last, it was closed and fsynced before the rename.
# INVARIANT: at every instant one of graph, graph.ready or graph.old is a complete store
#   (or none exists yet), so a kill at any point loses nothing a sync cannot re-derive.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from types import TracebackType

from ..crashpoints import crashpoint
from ..errors import GraphBusyError, GraphStoreError

#: where ``CRADLE_CRASH_AT`` can kill a rebuild (the crash tests visit each one)
REBUILD_CRASH_POINTS = (
    "graph.rebuild.building",
    "graph.rebuild.loaded",
    "graph.rebuild.retracted",
    "graph.rebuild.compacted",
    "graph.rebuild.ready",
    "graph.rebuild.aside",
    "graph.rebuild.swapped",
)


def lock_path(store: Path) -> Path:
    return store.with_name(store.name + ".lock")


def building_path(store: Path) -> Path:
    return store.with_name(store.name + ".building")


def ready_path(store: Path) -> Path:
    return store.with_name(store.name + ".ready")


def old_path(store: Path) -> Path:
    return store.with_name(store.name + ".old")


class StoreLock:
    """The exclusive, non-blocking lock on a store's folder (see the module docstring)."""

    def __init__(self, store: Path) -> None:
        self.path = lock_path(store)
        self._fd: int | None = None

    def acquire(self) -> StoreLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        except OSError as exc:
            raise GraphStoreError(f"cannot open the graph store's lock `{self.path}`: "
                                  f"{exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read_holder(fd)
            os.close(fd)
            who = f"process `{holder}`" if holder else "another process"
            raise GraphBusyError(
                f"graph store is busy: {who} holds `{self.path}`",
                hint="a runtime, server start-up or graph command is using it; the journal "
                     "is intact; retry when it is done") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return text if text.isdigit() else ""


def settle(store: Path) -> None:
    """Finish or undo an interrupted rebuild (the caller holds the lock)."""
    building, ready, old = building_path(store), ready_path(store), old_path(store)
    remove_folder(building)
    if ready.exists():
        if store.exists():
            remove_folder(old)
            os.rename(store, old)
        os.rename(ready, store)
        _fsync_dir(store.parent)
    if old.exists():
        if store.exists():
            remove_folder(old)
        else:
            os.rename(old, store)
            _fsync_dir(store.parent)


def swap_in(store: Path) -> None:
    """The last steps of a rebuild: ``graph.building`` (complete and closed) becomes the
    store. The caller holds the lock."""
    building, ready, old = building_path(store), ready_path(store), old_path(store)
    fsync_tree(building)
    os.rename(building, ready)
    _fsync_dir(store.parent)
    crashpoint("graph.rebuild.ready")
    if store.exists():
        remove_folder(old)
        os.rename(store, old)
        crashpoint("graph.rebuild.aside")
    os.rename(ready, store)
    _fsync_dir(store.parent)
    crashpoint("graph.rebuild.swapped")
    remove_folder(old)


def fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_folder(folder: Path) -> None:
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
