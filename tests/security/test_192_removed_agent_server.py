"""An agent removed from ``config.json`` acts and reads no more on a running server.

Finding (thirteenth attack review, beside ``test_190``): a token of ``cradle-kg api-token
issue`` authenticates an agent "still declared in the configuration" — the README's rule
for the JSON API, MCP over HTTP and the closed graph (``--graph-readers tokens``) — but a
long-lived process read the declared agents once, at start. The operator removed a
compromised agent from ``config.json`` (its entry and its permission: the closed world
says it is no one now) and did not also run ``api-token revoke``: on the running ``serve``
its token still authenticated, and its credit of 100 executed under the permission the
file no longer grants; on a running ``mcp serve --transport streamable-http`` its session
went on calling tools; and it still read the closed graph. The command line, which reads
the file at every command, refused it at once.

Now who the declared agents are is read from the file again whenever it changed (with the
approvers, ``config.ConfigFile``): the JSON API's and the MCP gateway's authentication
and the query workers guarding the graph refuse the removed agent's token at once (401,
nothing journaled); the agents still declared go on as before. A file that no longer loads
admits no agent (fail closed).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.server.auth import issue_agent_token
from cradle_kg.server.launch import ServerSettings, graph_readers

from .homes import credit, json_api
from .mcp_http import MALLORY, Client, Served, fresh, serve, token_for

pytestmark = pytest.mark.usefixtures("journal_backend")


def _remove(home: Path, agent: str) -> None:
    """The operator takes the agent out of the file (its entry and its permissions)."""
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "agents": tuple(a for a in config.agents if a.id != agent),
        "permissions": tuple(p for p in config.permissions if p.subject != agent)}))


def _intents(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events() if e.kind == "action.intent")


def test_a_removed_agent_acts_no_more_on_the_api(tmp_path: Path) -> None:
    home = fresh(tmp_path, "api-home")
    with Runtime(home, graph_sync=False) as rt, json_api(rt) as client:
        mallory = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, MALLORY)}
        ledger = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        out = client.post("/api/proposals", headers=mallory, json=credit("m1", agent=MALLORY))
        assert out.status_code == 200 and out.json()["status"] == "executed", out.text
        before = sum(1 for _ in rt.journal.events())

        _remove(home, MALLORY)  # the server keeps running
        assert client.get("/api/whoami", headers=mallory).status_code == 401  # before: 200
        out = client.post("/api/proposals", headers=mallory, json=credit("m2", agent=MALLORY))
        assert out.status_code == 401, out.text  # before: 200, executed
        assert sum(1 for _ in rt.journal.events()) == before
        assert _intents(rt) == 1
        # the agent still declared goes on
        out = client.post("/api/proposals", headers=ledger, json=credit("l1"))
        assert out.status_code == 200 and out.json()["status"] == "executed", out.text


def test_a_removed_agent_no_longer_reads_the_closed_graph(tmp_path: Path) -> None:
    home = fresh(tmp_path, "graph-home")
    with Runtime(home, graph_sync=False):
        pass
    readers = graph_readers(ServerSettings(home=home, graph_readers="tokens"))
    mallory, ledger = token_for(home, MALLORY), token_for(home, AGENT)
    assert readers.refusal(f"Bearer {mallory}") is None
    _remove(home, MALLORY)
    assert readers.refusal(f"Bearer {mallory}") is not None  # before: read on
    assert readers.refusal(f"Bearer {ledger}") is None


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(fresh(tmp_path, "mcp-home"))


def test_a_removed_agent_calls_no_more_over_mcp(served: Served) -> None:
    mallory = Client(served.url, token_for(served.home, MALLORY))
    try:
        first = mallory.call("demo.ledger.credit", {"account": "acct-1", "amount": 100})
        assert first["result"]["isError"] is False, first
        _remove(served.home, MALLORY)
        again = mallory.post_json({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                                   "params": {"name": "demo.ledger.credit",
                                              "arguments": {"account": "acct-1",
                                                            "amount": 100}}})
        assert again.status_code == 401, again.text  # before: 200, executed
    finally:
        mallory.close()
    intents = [e for e in served.events() if e.kind == "action.intent"]
    assert len(intents) == 1
