"""Runtime configuration: identities, permissions, approvers, limits, environments.

Lives in ``<home>/config.json`` (reviewable, versioned with the home). Every field has a
closed-world default: an identity that is not declared does not act.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import InputError
from .inputs import DEFAULT_LIMITS, FILE_LIMITS, InputLimits, load_json, read_file
from .records import Agent, Permission
from .storage.graph_config import GraphEndpoints, check_declared

#: the longest duration a configuration may give, in seconds (100 years): past what a
#: date can hold, a window or an age crashed every command or denied every call
MAX_SECONDS = 100 * 365 * 24 * 3600


class Approver(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str
    role: str = "approver"
    #: scopes this approver may approve within ("*" for all)
    scopes: tuple[str, ...] = ("*",)
    #: sha256 of the approver's token (``sha256:<hex>``); the token itself is never stored
    token_hash: str


class Limit(BaseModel):
    """A cost or rate limit; the strictest applicable one wins."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    scope: Literal["agent", "task", "tenant", "global"]
    #: the agent, task or tenant it applies to; "*" for each of them separately. A task id is
    #: the submitter's word (over the JSON API, the agent's own): a ``task`` limit budgets a
    #: task a host names and does not bound an agent naming new ones — an ``agent`` limit does.
    #: A task it counts is its first agent's at the doors an agent names it (another agent is
    #: refused there: :mod:`cradle_kg.loop.task_claims`)
    subject: str = "*"
    window_seconds: int = Field(gt=0, le=MAX_SECONDS)
    max_calls: int | None = Field(default=None, ge=0)
    max_cost: float | None = Field(default=None, ge=0)


class RuntimeConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    agents: tuple[Agent, ...] = ()
    permissions: tuple[Permission, ...] = ()
    approvers: tuple[Approver, ...] = ()
    limits: tuple[Limit, ...] = ()
    #: environments that exist at all; anything else is refused by gate 1
    environments: tuple[str, ...] = ("local", "staging", "production")
    #: environments where every side effect needs a human approval
    approval_environments: tuple[str, ...] = ("production",)
    #: how old evidence may be, in seconds, to count as fresh
    evidence_max_age_seconds: int = Field(default=7 * 24 * 3600, ge=0, le=MAX_SECONDS)
    #: every upload names the run it is evidence for (refused otherwise), and one journaled
    #: naming none counts in no run (``tests/security/test_248``); false: in any run
    evidence_requires_run: bool = False
    #: how old a verifier's read may be, in seconds, to count
    verification_max_age_seconds: int = Field(default=300, ge=0, le=MAX_SECONDS)
    #: repairs allowed per run before the outcome is "escalated"
    repair_budget: int = 3
    #: domain packs to load (ids or folders); the only way code is plugged into a home
    packs: tuple[str, ...] = ()
    #: sizes and shapes of untrusted input (proposals, request bodies, decisions)
    input_limits: InputLimits = DEFAULT_LIMITS
    #: the journal of record: unset for the embedded ``<home>/journal.sqlite``, or a
    #: ``postgresql://`` URL (``CRADLE_JOURNAL_URL`` overrides it)
    journal: str | None = Field(default=None, pattern=r"^postgres(ql)?://\S+$")
    #: how a read-only call's one transaction commits: ``deferred`` does not wait for the
    #: disk flush (kept if the process dies, flushed within ``deferred_flush_ms`` or by
    #: the next write; a power loss in that window may drop the record of the read),
    #: ``flushed`` waits for it like a write's commits (see the README, "Durability")
    read_commit: Literal["deferred", "flushed"] = "deferred"
    #: the longest a deferred commit waits for its flush on SQLite, in milliseconds (on
    #: PostgreSQL the server's WAL writer bounds it: ``wal_writer_delay``, 200 ms default)
    deferred_flush_ms: int = Field(default=200, ge=1, le=60_000)
    #: the graph store: unset for the embedded ``<home>/graph``, or a remote SPARQL 1.1
    #: store — its base URL or its endpoints (``CRADLE_GRAPH_URL`` overrides it; see
    #: :mod:`cradle_kg.storage.graph_config`)
    graph: str | GraphEndpoints | None = Field(default=None)

    def merged_with(self, extra: RuntimeConfig) -> RuntimeConfig:
        """This configuration plus the identities, permissions and approvers ``extra``
        declares and this one does not (by id) — how a pack adds its example identities."""
        have_agents = {a.id for a in self.agents}
        have_approvers = {a.id for a in self.approvers}
        return self.model_copy(update={
            "agents": (*self.agents, *(a for a in extra.agents if a.id not in have_agents)),
            "permissions": (*self.permissions, *(p for p in extra.permissions
                                                 if p not in self.permissions)),
            "approvers": (*self.approvers, *(a for a in extra.approvers
                                             if a.id not in have_approvers)),
        })

    def agent(self, agent_id: str) -> Agent | None:
        return next((a for a in self.agents if a.id == agent_id), None)

    def tenant_of(self, agent_id: str) -> str:
        """The tenant ``agent_id`` belongs to, as configured (``default`` for an agent
        not configured): what its intents and its workflows' model calls are counted in,
        never a tenant its proposal or its workflow's file names."""
        agent = self.agent(agent_id)
        return agent.tenant if agent is not None else "default"

    def approver(self, approver_id: str) -> Approver | None:
        return next((a for a in self.approvers if a.id == approver_id), None)


def load_config(path: Path) -> RuntimeConfig:
    """The configuration at ``path`` (the defaults when there is none), read by the strict
    loader: a key written twice is refused, never "the last one wins" — a reviewer reading
    the first ``approval_environments`` must not see another one take effect."""
    if not path.exists():
        return RuntimeConfig()
    return config_from_bytes(read_file(path, max_bytes=FILE_LIMITS.max_bytes),
                             source=str(path))


def config_from_bytes(data: bytes, *, source: str) -> RuntimeConfig:
    """The configuration a ``config.json`` holding ``data`` says, or a one-line
    :class:`InputError` naming ``source``: what :func:`load_config` does with the file's
    bytes, and what the graph's readers ask of the bytes they read
    (:mod:`cradle_kg.server.config_check`: ``tests/security/test_260``)."""
    raw = load_json(data, limits=FILE_LIMITS, source=source)
    if isinstance(raw, dict) and "plugins" in raw:
        raise InputError(f"`{source}`: `plugins` is no longer read: tools, verifiers and "
                         "validators come from packs, named in `packs`",
                         hint="the demo's ledger tools are the pack `demo.ledger`")
    try:
        config = RuntimeConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise InputError(f"`{source}`: `{loc}`: {first['msg'].lower()}") from exc
    check_declared(config.graph, where=f"`{source}`: `graph`:")
    return config


def _file_key(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when ``path`` is written or replaced (None: no such file)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class ConfigFile:
    """The home's ``config.json`` as the file says it *now*: read again whenever the file
    changed (its inode, size or times), else answered from memory — for who the home's
    identities are: its approvers (:meth:`approvers`) and its declared agents
    (:meth:`agents`).

    A long-lived process (``serve``, ``mcp serve``) loads its configuration once; an
    approver removed from the file, or whose token was replaced, still authenticated there
    and decided approvals, human steps and tasks until the process restarted — the command
    line, which reads the file each time, refused them at once (``tests/security/
    test_190``) — and an agent removed from it still authenticated with its token, acted
    with the permissions it no longer has and read the closed graph (``test_192``). A
    file that no longer loads admits no approver and no agent (fail closed) until it does
    again."""

    def __init__(self, path: Path, loaded: RuntimeConfig,
                 key: tuple[int, int, int, int] | None) -> None:
        self.path = path
        self._key = key
        self._config: RuntimeConfig | None = loaded
        self._problem: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> tuple[RuntimeConfig, ConfigFile]:
        """The configuration at ``path`` and its watch (the file's state read first: an
        edit while it loads is read again at the first ask)."""
        key = _file_key(path)
        config = load_config(path)
        return config, cls(path, config, key)

    def now(self) -> RuntimeConfig | None:
        """The configuration the file holds now; None when it does not load (or is gone)."""
        return self.current()[0]

    def current(self) -> tuple[RuntimeConfig | None, str | None]:
        """The configuration the file holds now (the same object while the file has not
        changed), or None and why it does not load."""
        key = _file_key(self.path)
        with self._lock:
            if key != self._key:
                problem: str | None = None
                try:
                    config: RuntimeConfig | None = (load_config(self.path) if key is not None
                                                    else None)
                    if config is None:
                        problem = f"`{self.path}` is gone"
                except InputError as exc:
                    config = None  # fail closed: a file that does not load admits no one
                    problem = exc.message
                self._key, self._config, self._problem = key, config, problem
            return self._config, self._problem

    def approvers(self) -> tuple[Approver, ...]:
        config = self.now()
        return config.approvers if config is not None else ()

    def agents(self) -> frozenset[str]:
        config = self.now()
        return frozenset(a.id for a in config.agents) if config is not None else frozenset()


@contextlib.contextmanager
def locked_beside(path: Path) -> Iterator[None]:
    """An exclusive lock on ``<path>.lock`` (created 0600): a read and a write of ``path``
    as one critical section across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def config_locked(path: Path) -> contextlib.AbstractContextManager[None]:
    """``config.json`` read and written as one critical section (two ``pack init`` at once
    each keep their pack)."""
    return locked_beside(path)


def update_config(path: Path, change: Callable[[RuntimeConfig], RuntimeConfig]) -> RuntimeConfig:
    """Read the configuration, let ``change`` make the new one, and save it, under the lock."""
    with config_locked(path):
        config = change(load_config(path))
        save_config(path, config)
        return config


def _umask() -> int:
    """This process's umask, read without setting it (``os.umask`` sets it: another thread
    creating a file in between would create it with the temporary mask)."""
    with contextlib.suppress(OSError, ValueError), \
            open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def save_config(path: Path, config: RuntimeConfig) -> None:
    """Write ``config`` in place of ``path`` (:func:`write_whole`): it may hold a journal
    URL's password and the approvers' token hashes, and a rewrite never makes it readable
    by others."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, config.model_dump_json(indent=2).encode("utf-8"))


def write_whole(path: Path, data: bytes) -> None:
    """``data`` in place of ``path``, whole or not at all: through a temporary file of this
    writer's own beside it, created 0600 and given the mode the file had (a new file: what
    writing it plainly gave), synced before it takes the file's name; on any failure the
    temporary file is removed and ``path`` is as it was (``export --output``: test_359)."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()  # a new file: what writing it plainly gave before
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
