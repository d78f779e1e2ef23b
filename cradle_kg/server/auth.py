"""Who is calling the JSON API: one bearer token per identity, only hashes stored.

Two kinds of identity, two places for their token hashes (``sha256:<hex>``):

* **approvers** — the ``approvers`` of the home's ``config.json`` (the same token the
  ``cradle-kg approvals`` commands take);
* **agents** submitting proposals — ``<home>/api-tokens.json``, written by
  ``cradle-kg api-token issue AGENT``, which prints the token once and keeps only its
  hash. Only agents declared in ``config.json`` get a token (closed world), and an agent
  may submit only its own proposals (``agent_id`` must be the caller).

A request carries ``Authorization: Bearer <token>``; the identity is the one whose hash
matches (compared in constant time). The token file is re-read on each request, so
issuing or revoking a token needs no restart.
"""

from __future__ import annotations

import hmac
import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from ..canonical import token_hash
from ..config import RuntimeConfig
from ..errors import InputError, UnknownNameError
from ..home import Home

TOKEN_FILE: Final = "api-tokens.json"
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


def token_file(home: Home) -> Path:
    return home.root / TOKEN_FILE


def read_agent_tokens(home: Home) -> dict[str, dict[str, Any]]:
    path = token_file(home)
    if not path.exists():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"`{path}`: cannot read the API tokens: {exc}") from exc
    identities = raw.get("identities", {}) if isinstance(raw, dict) else {}
    return {str(k): dict(v) for k, v in identities.items() if isinstance(v, dict)}


def _write_agent_tokens(home: Home, identities: dict[str, dict[str, Any]]) -> None:
    path = token_file(home)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"identities": identities}, indent=2, sort_keys=True),
                   encoding="utf-8")
    tmp.chmod(0o600)
    tmp.replace(path)


def issue_agent_token(home: Home, config: RuntimeConfig, agent_id: str) -> str:
    """A new token for a declared agent (replacing any previous one); returns the token."""
    if config.agent(agent_id) is None:
        raise UnknownNameError(f"`{agent_id}` is not an agent declared in `{home.config}`")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    identities = read_agent_tokens(home)
    identities[agent_id] = {"token_hash": token_hash(token),
                            "issued_at": datetime.now(UTC).isoformat()}
    _write_agent_tokens(home, identities)
    return token


def revoke_agent_token(home: Home, agent_id: str) -> bool:
    identities = read_agent_tokens(home)
    if identities.pop(agent_id, None) is None:
        return False
    _write_agent_tokens(home, identities)
    return True


def authenticate(home: Home, config: RuntimeConfig, token: str) -> Caller | None:
    """The identity a bearer token belongs to, or None."""
    if not token:
        return None
    digest = token_hash(token)
    roles: dict[str, set[str]] = {}
    for approver in config.approvers:
        if hmac.compare_digest(digest, approver.token_hash):
            roles.setdefault(approver.id, set()).add("approver")
    for agent_id, entry in read_agent_tokens(home).items():
        if hmac.compare_digest(digest, str(entry.get("token_hash", ""))) \
                and config.agent(agent_id) is not None:
            roles.setdefault(agent_id, set()).add("agent")
    if len(roles) != 1:  # no match, or one token shared by two identities: trust neither
        return None
    identity, kinds = next(iter(roles.items()))
    return Caller(identity, frozenset(kinds), token)
