"""Who is calling the JSON API: one bearer token per identity, only hashes stored.

Two kinds of identity, two places for their token hashes (``sha256:<hex>``):

* **approvers** — the ``approvers`` of the home's ``config.json`` (the same token the
  ``cradle-kg approvals`` commands take);
* **agents** submitting proposals — ``<home>/api-tokens.json``, written by
  ``cradle-kg api-token issue AGENT``, which prints the token once and keeps only its
  hash. Only agents declared in ``config.json`` get a token (closed world), and an agent
  may submit only its own proposals (``agent_id`` must be the caller). A token issued
  with ``--host`` is the *host application's* for that agent (role ``host``): over MCP's
  streamable HTTP it may also assert what only the host knows (``cradle-kg/facts``, the
  user's ``cradle-kg/input``), which lineage trusts; an agent's own token may not
  (``tests/security/test_68``).

A request carries ``Authorization: Bearer <token>``; the identity is the one whose hash
matches (compared in constant time). The token file is re-read on each request, so
issuing or revoking a token needs no restart — and again before a call that waited for one
of its identity's threads runs (``api_common.CallerThreads``, ``tests/security/test_500``).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import tempfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from ..canonical import token_hash
from ..config import Approver, RuntimeConfig, locked_beside
from ..errors import InputError, UnknownNameError
from ..home import Home
from .readers import TOKEN_FILE, read_tokens

TOKEN_PREFIX: Final = "ck_"


@dataclass(frozen=True)
class Caller:
    identity: str
    roles: frozenset[str]
    #: the token itself, kept to re-authenticate with the runtime (never logged)
    token: str = field(default="", repr=False)

    @property
    def is_approver(self) -> bool:
        return "approver" in self.roles

    @property
    def is_agent(self) -> bool:
        return "agent" in self.roles

    @property
    def is_host(self) -> bool:
        """The host application's token for an agent (``api-token issue --host``)."""
        return "host" in self.roles


def token_file(home: Home) -> Path:
    return home.root / TOKEN_FILE


def read_agent_tokens(home: Home) -> dict[str, dict[str, Any]]:
    """The agents' token entries, or a one-line :class:`InputError`: the file checked as
    the graph's readers check it (:func:`.readers.read_tokens`, one check for both: before,
    this read a FIFO in its place for ever, took the last of a key given twice and skipped
    a malformed entry: ``tests/security/test_261``)."""
    path = token_file(home)
    if not path.exists():
        return {}
    try:
        return {str(k): dict(v) for k, v in read_tokens(str(path)).items()}
    except (OSError, ValueError) as exc:
        raise InputError(f"`{path}`: cannot read the API tokens: {exc}") from None


def _tokens_locked(home: Home) -> contextlib.AbstractContextManager[None]:
    """The read and the write of the tokens file as one critical section, across
    processes (two ``api-token issue`` at once each keep their agent's token)."""
    return locked_beside(token_file(home))


def _update_agent_tokens(home: Home,
                         change: Callable[[dict[str, dict[str, Any]]], bool]) -> bool:
    """Read the identities, let ``change`` edit them, and write them back if it says so —
    under the lock, through a temporary file of this writer's own, created 0600 (the hashes
    are never readable by others, not even for a moment)."""
    path = token_file(home)
    with _tokens_locked(home):
        identities = read_agent_tokens(home)
        if not change(identities):
            return False
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(json.dumps({"identities": identities}, indent=2, sort_keys=True))
                out.flush()
                os.fsync(out.fileno())  # on disk before it takes the file's name
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return True


def issue_agent_token(home: Home, config: RuntimeConfig, agent_id: str, *,
                      host: bool = False) -> str:
    """A new token for a declared agent (replacing any previous one); returns the token.
    ``host``: the host application's token for it, which may assert the host's facts and
    the user's input over MCP (see the module's docstring)."""
    if config.agent(agent_id) is None:
        raise UnknownNameError(f"`{agent_id}` is not an agent declared in `{home.config}`")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)

    def add(identities: dict[str, dict[str, Any]]) -> bool:
        identities[agent_id] = {"token_hash": token_hash(token),
                                "issued_at": datetime.now(UTC).isoformat(),
                                **({"host": True} if host else {})}
        return True

    _update_agent_tokens(home, add)
    return token


def revoke_agent_token(home: Home, agent_id: str) -> bool:
    return _update_agent_tokens(
        home, lambda identities: identities.pop(agent_id, None) is not None)


def authenticate(home: Home, config: RuntimeConfig, token: str,
                 approvers: Sequence[Approver] | None = None,
                 agents: Collection[str] | None = None) -> Caller | None:
    """The identity a bearer token belongs to, or None. ``approvers`` and ``agents``: the
    approvers and the declared agents as the home's configuration says them now
    (``Runtime.approvals.approvers()``, ``Runtime.declared_agents()``: one removed from the
    file since the server started no longer authenticates, ``tests/security/test_190``,
    ``test_192``); default ``config``'s."""
    if not token:
        return None
    digest = token_hash(token)
    roles: dict[str, set[str]] = {}
    for approver in (config.approvers if approvers is None else approvers):
        if hmac.compare_digest(digest, approver.token_hash):
            roles.setdefault(approver.id, set()).add("approver")
    try:
        tokens = read_agent_tokens(home)
    except InputError:  # fail closed: a token file that does not load admits no agent
        tokens = {}
    for agent_id, entry in tokens.items():
        declared = (config.agent(agent_id) is not None if agents is None
                    else agent_id in agents)
        if hmac.compare_digest(digest, str(entry.get("token_hash", ""))) and declared:
            roles.setdefault(agent_id, set()).add("agent")
            if entry.get("host") is True:  # exactly true: anything else is an agent's
                roles[agent_id].add("host")
    if len(roles) != 1:  # no match, or one token shared by two identities: trust neither
        return None
    identity, kinds = next(iter(roles.items()))
    return Caller(identity, frozenset(kinds), token)
