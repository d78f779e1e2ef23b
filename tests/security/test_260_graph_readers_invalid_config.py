"""The closed graph's readers refuse every ``config.json`` the runtime refuses.

Attack: the query workers read ``config.json`` with the standard library (they import no
pydantic: ``tests/server/test_worker_lean.py``) and took the approvers' token hashes and
the agents' ids from any well-formed JSON (``test_206`` made the read itself strict). A
file that is JSON but fails the runtime's validation — a key the model does not know, a
value of the wrong type, an id that is not a string, a retired key (``plugins``) — makes
the runtime refuse it (``config_unloadable``: no approver, no agent, every proposal
denied) while the graph still admitted the approvers and agents it listed: an operator's
half-finished edit, or one the runtime refused for a reason the reviewer saw, still let
its tokens read every run's provenance.

What must hold: the readers ask the runtime's own validator (in a child process: the
workers stay lean) whether the bytes they read are a configuration it loads; one it
refuses admits no approver and no agent on the graph (401, the reason said), and the same
file made good admits them again. A corpus of bad files is refused by both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.canonical import token_hash
from cradle_kg.config import load_config
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, prepare_home
from cradle_kg.errors import InputError
from cradle_kg.server.readers import GraphReaders
from tests import oneshot

from ..server.conftest import start_server, stop_server
from .homes import replace_file

BOB = "bob-token-0123456789"
BOB_ENTRY = {"id": "human:bob", "token_hash": token_hash(BOB)}
GOOD: dict[str, Any] = {"approvers": [BOB_ENTRY],
                        "agents": [{"id": "agent:ledger-assistant"}]}

#: JSON the runtime's validator refuses, each with the good approver in it
BAD: dict[str, dict[str, Any]] = {
    "unknown key": {**GOOD, "approverz": []},
    "wrong type": {**GOOD, "repair_budget": "three"},
    "agent id not a string": {**GOOD, "agents": [{"id": 7}]},
    "agent with an unknown key": {**GOOD, "agents": [{"id": "agent:a", "rol": "x"}]},
    "approver with an unknown key": {**GOOD, "approvers": [{**BOB_ENTRY, "scope": ["*"]}]},
    "approver scopes not a list": {**GOOD, "approvers": [{**BOB_ENTRY, "scopes": "*"}]},
    "retired key": {**GOOD, "plugins": {}},
    "limit out of range": {**GOOD, "limits": [{"scope": "agent", "window_seconds": 0}]},
    "input limits wrong": {**GOOD, "input_limits": {"max_bytes": "big"}},
    "journal not a URL": {**GOOD, "journal": "mysql://x"},
    "permission condition unknown": {**GOOD, "permissions": [
        {"subject": "agent:a", "conditions": {"no_such_condition": 1}}]},
    "not an object": [GOOD],
}


def _write(path: Path, value: Any) -> None:
    replace_file(path, json.dumps(value))


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    _write(path, GOOD)
    return path


def test_the_good_file_loads_and_admits(config: Path) -> None:
    load_config(config)
    assert GraphReaders(who="approvers", config_file=str(config)).refusal(
        f"Bearer {BOB}") is None


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_file_the_runtime_refuses_admits_no_one_on_the_graph(config: Path,
                                                               name: str) -> None:
    readers = GraphReaders(who="tokens", config_file=str(config))
    assert readers.refusal(f"Bearer {BOB}") is None
    _write(config, BAD[name])
    with pytest.raises(InputError):  # the runtime refuses it (config_unloadable)
        load_config(config)
    refused = readers.refusal(f"Bearer {BOB}")
    assert refused is not None, name  # before: the approver read the graph
    assert "config.json" in refused and "does not load" in refused
    assert "approver" in refused and "{needed}" not in refused
    _write(config, GOOD)  # made good again: admitted again
    assert readers.refusal(f"Bearer {BOB}") is None


@pytest.mark.slow
def test_the_servers_workers_refuse_while_the_runtime_does(tmp_path: Path) -> None:
    """The query workers (lean, forked) ask the runtime's loader too: 401 on the graph,
    as on the API, while the file does not load; 200 again once it does."""
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home):
        pass
    config = home / "config.json"
    good = json.loads(config.read_text(encoding="utf-8"))
    approver = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}",
                "Accept": "application/sparql-results+json"}
    srv = start_server(["--home", str(home), "--graph-readers", "approvers"],
                       tmp_path / "serve.log", home)
    try:
        def graph() -> Any:
            return oneshot.get(srv.url + "/sparql", params={"query": "ASK { ?s ?p ?o }"},
                               headers=approver, timeout=60)
        def whoami() -> int:
            return oneshot.get(srv.url + "/api/whoami", headers=approver,
                               timeout=60).status_code
        assert graph().status_code == 200 and whoami() == 200
        _write(config, {**good, "approver_environments": ["production"]})  # a typo
        assert whoami() == 401  # the runtime admits no one
        refused = graph()
        assert refused.status_code == 401, refused.text  # before: 200, the graph read
        assert "does not load" in refused.text
        assert "approver_environments" not in refused.text  # the why: the server's log
        assert "approver_environments" in (tmp_path / "serve.log").read_text()
        _write(config, good)
        assert graph().status_code == 200
    finally:
        stop_server(srv)
