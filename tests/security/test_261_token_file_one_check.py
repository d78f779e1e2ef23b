"""The runtime and the graph's readers take the agents' token file by one check.

Attack: ``api-tokens.json`` was read twice, differently. The runtime read it with
``read_text`` and ``json.loads`` — a FIFO in its place held the request for ever, a key
given twice took the last, and an entry that was not an object was skipped while the rest
admitted — and the graph's readers strictly (``test_206``) but skipped malformed entries
too. A file hand-edited into a shape neither wrote (an entry of another form, a ``host``
of ``"yes"``, a hash that is no ``sha256:<hex>``) admitted agents on one door and not the
other, and each door's reading could drift from the other's.

What must hold: one check (:func:`cradle_kg.server.readers.read_tokens`) for both; a
token file it refuses admits no agent on the JSON API and MCP (approvers still
authenticate: they are in ``config.json``) and none on the graph; the file made good
admits again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.config import load_config
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.home import Home
from cradle_kg.server.auth import authenticate
from cradle_kg.server.readers import GraphReaders

from .homes import replace_file
from .mcp_http import AGENT, MALLORY, fresh, token_for

#: what is done to a good token file (its agent's entry kept as issued)
BAD: dict[str, Any] = {
    "another entry not an object": lambda ids: {**ids, MALLORY: "ck_plaintext"},
    "host not a boolean": lambda ids: {AGENT: {**ids[AGENT], "host": "yes"}},
    "hash not of the form": lambda ids: {**ids, MALLORY: {"token_hash": "5"}},
    "an unknown key": lambda ids: {AGENT: {**ids[AGENT], "scopes": ["*"]}},
}


def _both(home: Path, token: str) -> tuple[bool, bool]:
    """Whether the runtime and the graph admit ``token`` now."""
    config = load_config(home / "config.json")
    readers = GraphReaders(who="tokens", config_file=str(home / "config.json"),
                           token_file=str(home / "api-tokens.json"))
    return (authenticate(Home(home), config, token) is not None,
            readers.refusal(f"Bearer {token}") is None)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_malformed_token_file_admits_no_agent_anywhere(tmp_path: Path, name: str) -> None:
    home = fresh(tmp_path, "home")
    token = token_for(home, AGENT)
    path = home / "api-tokens.json"
    good = path.read_text(encoding="utf-8")
    assert _both(home, token) == (True, True)
    identities = json.loads(good)["identities"]
    replace_file(path, json.dumps({"identities": BAD[name](identities)}))
    assert _both(home, token) == (False, False), name  # before: admitted by one or both
    approver = authenticate(Home(home), load_config(home / "config.json"),
                            DEMO_TOKENS[APPROVER])
    assert approver is not None and approver.is_approver  # the approvers are config.json's
    replace_file(path, good)
    assert _both(home, token) == (True, True)


def test_a_key_given_twice_is_refused_by_both(tmp_path: Path) -> None:
    """Before: the runtime took the last entry (the readers refused the file)."""
    home = fresh(tmp_path, "home")
    token = token_for(home, AGENT)
    path = home / "api-tokens.json"
    entry = json.dumps(json.loads(path.read_text(encoding="utf-8"))["identities"][AGENT])
    replace_file(path, f'{{"identities": {{"{AGENT}": {{"token_hash": "sha256:{"0" * 64}"}}, '
                 f'"{AGENT}": {entry}}}}}')
    assert _both(home, token) == (False, False)
