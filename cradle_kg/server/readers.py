"""Who may read the provenance graph over HTTP (``/sparql``, ``/queries/NAME``).

The graph holds every run of every agent, and — for a proposal lineage traced — its string
arguments' values and the sentences they were traced to (a mail body, a recipient, a
password an agent was asked to set: the sixth attack review). By default (``anyone``) the
endpoint answers whoever reaches it, as a SPARQL endpoint usually does: bind it where
everyone who can reach it may read all of that. ``cradle-kg serve --graph-readers
approvers`` answers only a request carrying an approver's bearer token (the token of the
home's ``config.json``); ``tokens``, any token of the home — an approver's, or one of
``cradle-kg api-token issue`` for an agent still declared in the configuration. Anything
else is a 401 naming what is needed, before the query is read.

Checked in the query workers themselves (no runtime there: the hashes are handed over at
start, the token file re-read on each request, so an issued or revoked token takes effect
at once, as on ``/api``); compared in constant time, the token never kept.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Final

#: the agents' token file in a home (:mod:`.auth`'s, named here: a query worker imports
#: this module, not the API's)
TOKEN_FILE: Final = "api-tokens.json"


@dataclass(frozen=True)
class GraphReaders:
    """The readers a server answers (picklable: each query worker is given one)."""

    who: str = "anyone"
    #: the approvers' token hashes (``config.json``) when the server started
    approver_hashes: tuple[str, ...] = ()
    #: the home's ``config.json``, whose approvers' hashes and declared agents are read
    #: again when it changed (one removed since the server started reads no more:
    #: test_190, test_192)
    config_file: str | None = None
    #: ``tokens``: the agents' token file (``api-tokens.json``) and the agents declared
    token_file: str | None = None
    agents: tuple[str, ...] = ()
    #: the digest of ``config_file``'s bytes the server loaded at start (the runtime's
    #: loader accepted them: no child is asked about them, :func:`runtime_refusal`)
    accepted: str = ""

    @property
    def open(self) -> bool:
        return self.who == "anyone"

    def refusal(self, authorization: str | None) -> str | None:
        """Why a request with this ``Authorization`` header may not read, or None."""
        if self.open:
            return None
        needed = ("an approver's bearer token" if self.who == "approvers"
                  else "a bearer token of this home (an approver's or an agent's)")
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return f"reading the graph needs {needed}: `Authorization: Bearer <token>`"
        if self._identities()[2]:
            return ("no token may read the graph now: the home's config.json does not load "
                    "(the runtime refuses it too and admits no one; the server's log says "
                    f"why) or could not be checked; it needs {needed} once the file loads")
        # the hash :func:`cradle_kg.canonical.token_hash` keeps, computed here: the query
        # workers' fork server imports no pydantic (``tests/server/test_worker_lean.py``)
        digest = "sha256:" + hashlib.sha256(token.strip().encode("utf-8")).hexdigest()
        if any(hmac.compare_digest(digest, h) for h in self._approver_hashes()):
            return None
        if self.who == "tokens" and any(hmac.compare_digest(digest, h)
                                        for h in self._agent_hashes()):
            return None
        return f"this token may not read the graph: it needs {needed}"

    def _identities(self) -> tuple[tuple[str, ...], frozenset[str] | None, bool]:
        """The approvers' token hashes and the declared agents as the home's configuration
        says them now, and whether it does not load (read with the standard library: the
        query workers import no pydantic; again only when the file changed). A file that
        cannot be read, or whose bytes the runtime's own validator refuses
        (:func:`runtime_refusal`), admits no approver and no agent (fail closed). Without
        a file: those given at start (agents: None, the given tuple)."""
        if self.config_file is None:
            return self.approver_hashes, None, False
        try:
            key = os.stat(self.config_file)
        except OSError:
            return (), frozenset(), True
        stamp = (key.st_ino, key.st_size, key.st_mtime_ns, key.st_ctime_ns)
        cached = _CONFIG_IDENTITIES.get(self.config_file)
        if cached is not None and cached[0] == stamp:
            return cached[1], cached[2], cached[3]
        hashes: tuple[str, ...] = ()
        agents: frozenset[str] = frozenset()
        refused = True
        try:
            data = read_bytes(self.config_file)
            # INVARIANT: only bytes the runtime loads admit anyone: a config.json that is
            # JSON but fails its validation (an unknown key, a wrong type) admitted the
            # approvers it listed here while the runtime refused it (tests/security/test_260)
            if self.accepted != content_digest(data) and runtime_refusal(self.config_file,
                                                                  data) is not None:
                raise ValueError("the runtime does not load it")
            raw = parse_json(data)
            if isinstance(raw, dict):
                listed = raw.get("approvers", [])
                hashes = tuple(a["token_hash"] for a in listed if isinstance(a, dict)
                               and isinstance(a.get("token_hash"), str))
                agents = frozenset(a["id"] for a in raw.get("agents", [])
                                   if isinstance(a, dict) and isinstance(a.get("id"), str))
                refused = False
        except (OSError, ValueError, TypeError, AttributeError):
            hashes, agents = (), frozenset()
        _CONFIG_IDENTITIES[self.config_file] = (stamp, hashes, agents, refused)
        return hashes, agents, refused

    def _approver_hashes(self) -> tuple[str, ...]:
        return self._identities()[0]

    def _agent_hashes(self) -> set[str]:
        """The token hashes of the declared agents, read now (no file: none)."""
        if self.token_file is None:
            return set()
        now = self._identities()[1]
        declared = self.agents if now is None else now
        try:
            identities = read_tokens(self.token_file)
        except (OSError, ValueError):
            return set()  # fail closed: an unreadable or malformed file admits no agent
        return {entry["token_hash"] for agent, entry in identities.items()
                if agent in declared}


#: the largest file read: :data:`cradle_kg.inputs.FILE_LIMITS`' (not imported: the query
#: workers import no pydantic; ``tests/security/test_206``)
MAX_FILE_BYTES: Final = 64 * 1024 * 1024


def _no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a key given twice")
    return out


def read_bytes(path: str) -> bytes:
    """A home's JSON file's bytes as the runtime's strict loader reads them, or
    ``ValueError`` / ``OSError``: a regular file (opened without blocking: a FIFO in its
    place would hold the worker for ever), at most :data:`MAX_FILE_BYTES`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb", closefd=True) as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            raise ValueError("not a regular file within the limit")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError("past the limit")
    return data


def parse_json(data: bytes) -> Any:
    """``data`` decoded as UTF-8 JSON with no key given twice (the runtime refuses such a
    ``config.json`` and admits no one; the last list must not be the one in force here —
    ``tests/security/test_206``), or ``ValueError``."""
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_key_twice)
    except RecursionError:  # nested past the stack: refused as the strict loader does
        raise ValueError("nested too deep") from None


def read_json(path: str) -> Any:
    """A home's JSON file read strictly (:func:`read_bytes`, :func:`parse_json`)."""
    return parse_json(read_bytes(path))


def content_digest(data: bytes) -> str:
    """The digest by which a configuration's bytes are known (:attr:`GraphReaders.accepted`)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


#: the keys of one agent's entry in the token file (``cradle-kg api-token issue`` writes
#: them), and the form of its token's hash (:func:`cradle_kg.canonical.token_hash`)
TOKEN_ENTRY_KEYS: Final = frozenset({"token_hash", "issued_at", "host"})
_TOKEN_HASH = re.compile(r"sha256:[0-9a-f]{64}")


def read_tokens(path: str) -> dict[str, dict[str, Any]]:
    """The agents' token file (``api-tokens.json``) as the runtime and the graph's readers
    both take it, or ``ValueError`` / ``OSError`` — one check for both
    (:func:`cradle_kg.server.auth.read_agent_tokens` calls it), so that neither admits an
    agent the other would not: read strictly (:func:`read_json`), an object whose only
    key is ``identities``, an object of entries, each an object of
    :data:`TOKEN_ENTRY_KEYS` with a ``token_hash`` of the form ``sha256:<64 hex>``, a
    ``host`` exactly true or false and an ``issued_at`` string when given. Anything else
    is a malformed file, which admits no agent anywhere (``tests/security/test_261``)."""
    raw = read_json(path)
    if not isinstance(raw, dict) or set(raw) - {"identities"}:
        raise ValueError("not an object whose only key is `identities`")
    identities = raw.get("identities", {})
    if not isinstance(identities, dict):
        raise ValueError("`identities` is not an object")
    for agent, entry in identities.items():
        if not isinstance(entry, dict) or set(entry) - TOKEN_ENTRY_KEYS:
            raise ValueError(f"`identities.{agent}`: not an object of "
                             f"{', '.join(sorted(TOKEN_ENTRY_KEYS))}")
        if not (isinstance(entry.get("token_hash"), str)
                and _TOKEN_HASH.fullmatch(entry["token_hash"])):
            raise ValueError(f"`identities.{agent}.token_hash`: not `sha256:<64 hex>`")
        if not isinstance(entry.get("host", False), bool) \
                or not isinstance(entry.get("issued_at", ""), str):
            raise ValueError(f"`identities.{agent}`: `host` is true or false, `issued_at` "
                             "a string")
    return identities


#: how long the runtime's validator may take over one configuration, in seconds (past it:
#: refused, fail closed)
CONFIG_CHECK_SECONDS: Final = 60
#: the runtime's answers, by the digest of the bytes asked about: None, it loads them;
#: else why not (at most :data:`MAX_VERDICTS`, the oldest forgotten first)
_VERDICTS: dict[str, str | None] = {}
MAX_VERDICTS: Final = 64


def runtime_refusal(source: str, data: bytes) -> str | None:
    """Why the runtime does not load a ``config.json`` holding ``data``, or None.

    Asked of the runtime's own loader in a child process (:mod:`.config_check`): the query
    workers import no pydantic (``tests/server/test_worker_lean.py``), and a second
    validator written here for them would drift from the runtime's. Once per content of
    the file (a few hundred milliseconds, on the worker that reads it first after an
    edit); a child that cannot be run, or does not answer within
    :data:`CONFIG_CHECK_SECONDS`, refuses (fail closed)."""
    digest = content_digest(data)
    if digest in _VERDICTS:
        return _VERDICTS[digest]
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
    why: str | None
    try:
        done = subprocess.run([sys.executable, "-P", "-m", "cradle_kg.server.config_check",
                               source],
                              input=data, capture_output=True, env=env, check=False,
                              timeout=CONFIG_CHECK_SECONDS)
        why = None if done.returncode == 0 else (
            done.stdout.decode("utf-8", "replace").strip() or "the runtime's loader failed")
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the runtime's loader could not be asked: {exc}"  # not remembered
    if why is not None:  # the operator's to read, once per content (never a client's)
        sys.stderr.write(f"cradle-kg: the graph admits no reader: {why}\n")
    while len(_VERDICTS) >= MAX_VERDICTS:
        del _VERDICTS[next(iter(_VERDICTS))]
    _VERDICTS[digest] = why
    return why


#: the identities read from a configuration file, by its path: (its state, the approvers'
#: token hashes, the declared agents, whether it does not load)
_CONFIG_IDENTITIES: dict[str, tuple[tuple[int, int, int, int], tuple[str, ...],
                                    frozenset[str], bool]] = {}

#: the header a 401 carries (RFC 6750)
CHALLENGE: Final = 'Bearer realm="cradle-kg graph"'


def reads_graph(path: str) -> bool:
    """Whether a request for ``path`` reads the graph: ``/sparql``, ``/queries/NAME``."""
    return path == "/sparql" or (path.startswith("/queries/") and len(path) > 9)


class GraphReadGuard:
    """ASGI middleware of the app: its own ``/sparql`` and ``/queries/NAME`` routes (the
    query workers answer those on the port, and check :class:`GraphReaders` there) refuse
    a reader the server does not admit, as the workers do."""

    def __init__(self, app: Any, readers: GraphReaders) -> None:
        self.app = app
        self.readers = readers

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self.readers.open and reads_graph(scope["path"]) \
                and scope["method"] != "OPTIONS":  # a CORS preflight carries no token
            header = next((bytes(v).decode("latin-1") for k, v in scope["headers"]
                           if k == b"authorization"), None)
            refused = self.readers.refusal(header)
            if refused is not None:
                body = refused.encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", CHALLENGE.encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

__all__ = ["CHALLENGE", "TOKEN_FILE", "GraphReadGuard", "GraphReaders",
           "reads_graph"]
