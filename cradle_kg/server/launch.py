"""Start-up without the web framework: the settings, the private store, the workers.

``cradle-kg serve`` calls :func:`start_front` first — the query workers answer ``/sparql``
on the port as soon as they have opened the first generation — and only then imports
and builds the app (FastAPI, the runtime), which takes longer than all of that.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import CradleError
from ..graph.sparql_guard import (
    MAX_QUERY_BYTES,
    MAX_QUERY_DEPTH,
    MAX_QUERY_OPERATORS,
    MAX_QUERY_PATTERNS,
)
from ..home import Home
from ..storage import home_journal_target, is_postgres
from .dataset import PrivateStore, snapshot_files, snapshot_home
from .deadlines import HEADER_SECONDS
from .front import MAX_WORKER_BYTES, FrontConfig
from .guard import MAX_BODY_BYTES
from .readers import TOKEN_FILE, GraphReaders, content_digest
from .supervisor import QueryFront, listen, start_fork_server
from .worker import Limits


class ServerSettings(BaseModel):
    """Everything ``cradle-kg serve`` can set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path | None = None
    files: tuple[Path, ...] = ()
    #: seconds a query may run (waiting for a free worker included)
    timeout_seconds: float = Field(10.0, gt=0)
    #: bytes a serialized result may take
    max_result_bytes: int = Field(50_000_000, gt=0)
    #: bytes of resident memory a query worker may hold while it runs queries (503 and
    #: the worker replaced beyond: :attr:`.front.FrontConfig.max_worker_bytes`)
    max_worker_memory: int = Field(MAX_WORKER_BYTES, gt=0)
    workers: int = Field(2, ge=1)
    #: SERVICE endpoints a query may name (none by default: no outbound request)
    allowed_services: tuple[str, ...] = ()
    query_dirs: tuple[Path, ...] = ()
    #: named queries added by packs: pack id -> name -> file
    pack_queries: dict[str, dict[str, Path]] = Field(default_factory=dict)
    #: the web origins whose pages may read the answers (``*``: any); none by default —
    #: any site the user visits could otherwise read the provenance graph through their
    #: browser (``tests/security/test_51``)
    cors_origins: tuple[str, ...] = ()
    #: the names a request's ``Host`` may give (empty: any); a loopback server's are its
    #: loopback names, so a DNS-rebound site cannot reach it (:func:`.front.allowed_host`)
    allowed_hosts: tuple[str, ...] = ()
    #: bytes a request body may take (413 before authentication and parsing)
    max_body_bytes: int = Field(MAX_BODY_BYTES, gt=0)
    #: bytes a SPARQL query may take, how deeply its brackets may nest, how many triple
    #: patterns and path steps it may join (``sparql_guard.pattern_count``) and how many
    #: operators it may chain (``operator_count``; 400 beyond)
    max_query_bytes: int = Field(MAX_QUERY_BYTES, gt=0)
    max_query_depth: int = Field(MAX_QUERY_DEPTH, gt=0)
    max_query_patterns: int = Field(MAX_QUERY_PATTERNS, gt=0)
    max_query_operators: int = Field(MAX_QUERY_OPERATORS, gt=0)
    #: seconds a client has to send a request's headers (408 and closed beyond)
    header_seconds: float = Field(HEADER_SECONDS, gt=0)
    #: who may read the graph (``/sparql``, ``/queries/NAME``): :mod:`.readers`
    graph_readers: Literal["anyone", "approvers", "tokens"] = "anyone"


def graph_readers(settings: ServerSettings) -> GraphReaders:
    """The readers ``settings`` admit, with the home's token hashes (read now; the agents'
    token file on each request). A closed graph needs a home: its tokens are there."""
    if settings.graph_readers == "anyone":
        return GraphReaders()
    if settings.home is None or settings.files:
        raise CradleError(f"`--graph-readers {settings.graph_readers}` needs a home "
                          "(`--home H`): the tokens that may read are the home's",
                          hint="files served without a home have no tokens: bind the "
                               "server where its readers may read them")
    from ..config import RuntimeConfig, config_from_bytes
    from ..inputs import FILE_LIMITS, read_file

    home = Home(settings.home)
    config, accepted = RuntimeConfig(), ""
    if home.config.exists():  # the bytes the runtime's loader accepted: no child asked
        data = read_file(home.config, max_bytes=FILE_LIMITS.max_bytes)
        config, accepted = config_from_bytes(data, source=str(home.config)), \
            content_digest(data)
    return GraphReaders(who=settings.graph_readers,
                        approver_hashes=tuple(a.token_hash for a in config.approvers),
                        config_file=str(home.config),
                        token_file=str(home.root / TOKEN_FILE),
                        agents=tuple(a.id for a in config.agents), accepted=accepted)


def serving_mode(settings: ServerSettings) -> str:
    """``home`` (a runtime behind ``/api``) or ``files`` (RDF files, read-only)."""
    return "files" if settings.files or settings.home is None else "home"


def prepare_source(settings: ServerSettings, workdir: Path) -> PrivateStore:
    snapshot = workdir / "store"
    if settings.files:
        return snapshot_files(list(settings.files), snapshot)
    if settings.home is None:
        raise CradleError("serve needs a home or RDF files")
    return snapshot_home(Home(settings.home), snapshot)


#: the server's private folder (its store, generations, the app's socket) in the temp dir
WORKDIR_PREFIX: Final = "cradle-serve-"
#: the pid of the server that made the folder
OWNER_FILE: Final = "owner.pid"


def hold_owner(workdir: Path) -> int:
    """Write this process's pid into ``workdir``'s :data:`OWNER_FILE` under an exclusive
    ``flock`` it keeps (the descriptor returned; the kernel drops the lock when the process
    ends, SIGKILL included): how another server, whatever pids it sees, knows the folder's
    owner lives (:func:`remove_abandoned`)."""
    fd = os.open(workdir / OWNER_FILE, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW,
                 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # before the pid: never a pid unheld
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
    except BaseException:
        os.close(fd)
        raise
    return fd


def release_owner(fd: int) -> None:
    """Let the lock of :func:`hold_owner` go (once its folder is removed)."""
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)


def remove_abandoned(tmp: Path) -> list[Path]:
    """Remove the private folders of servers that are gone (killed: SIGKILL, a crash, the
    machine's power), each a full copy of a graph (~0.5 GB at 1.4 M quads); returns them.

    Only this user's folders that name their owner's pid, only when no process has that
    pid — a pid reused by another process keeps a folder (the safe side) — and only when
    the owner's lock on the pid file can be taken (held while the folder is removed): a
    pid names a process within one pid namespace, and a live server of another (a
    container sharing the temp dir) holds its lock, which this one sees whatever its pids
    (before, its folder was removed under it: ``tests/security/test_172``). A folder of a
    server still starting (no pid file yet) or of an older cradle-kg (none at all) is left
    alone."""
    removed = []
    for folder in tmp.glob(WORKDIR_PREFIX + "*"):
        try:
            if folder.is_symlink() or folder.stat().st_uid != os.getuid():
                continue
            pid = int((folder / OWNER_FILE).read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            continue
        if pid <= 0 or pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):  # alive, another user's; not a pid
            continue
        else:
            continue
        try:
            fd = os.open(folder / OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its owner lives, in a pid space this one does not see
            os.close(fd)
            continue
        try:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(fd)
        removed.append(folder)
    return removed


def start_front(settings: ServerSettings, host: str, port: int) -> QueryFront:
    """Bind the server's socket, prepare its private store and start the query workers
    (they answer ``/sparql`` as soon as they are up, before the app is built)."""
    start_fork_server()  # first: it imports the workers' modules while the rest happens
    sock = listen(host, port)
    remove_abandoned(Path(tempfile.gettempdir()))
    workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))
    try:
        owner = hold_owner(workdir)
    except BaseException:
        sock.close()
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    try:
        # the source is prepared now, so a bad file or home fails before the server listens
        source = prepare_source(settings, workdir)
        journal = None
        follows = not settings.files and settings.home is not None
        if follows and settings.home is not None:
            target = home_journal_target(settings.home)
            journal = None if is_postgres(target) else target
        config = FrontConfig(
            limits=Limits(max_bytes=settings.max_result_bytes,
                          allowed_services=settings.allowed_services,
                          max_query_bytes=settings.max_query_bytes,
                          max_query_depth=settings.max_query_depth,
                          max_query_patterns=settings.max_query_patterns,
                          max_query_operators=settings.max_query_operators),
            timeout=settings.timeout_seconds, app_socket=str(workdir / "app.sock"),
            max_body_bytes=settings.max_body_bytes, follows=follows, journal=journal,
            query_dirs=settings.query_dirs, pack_queries=settings.pack_queries,
            cors_origins=settings.cors_origins, federated=bool(settings.allowed_services),
            header_seconds=settings.header_seconds, allowed_hosts=settings.allowed_hosts,
            readers=graph_readers(settings), max_worker_bytes=settings.max_worker_memory)
        front = QueryFront(source, config, sock, workdir=workdir, size=settings.workers)
        front.owner = owner
        front.start()
    except BaseException:
        sock.close()
        shutil.rmtree(workdir, ignore_errors=True)
        release_owner(owner)
        raise
    return front


__all__ = ["ServerSettings", "graph_readers", "hold_owner", "prepare_source", "release_owner",
           "serving_mode", "start_front"]
