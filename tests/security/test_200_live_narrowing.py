"""Narrowing an agent or adding a forbid takes effect on a running server, without a restart.

Finding (thirteenth attack review, left open): ``test_190`` and ``test_192`` made *who*
the approvers and agents are current in a long-lived process, but what a declared agent
may do — its permissions, limits, environments — and the home's Cedar policies were read
once, at start. During an incident the SRE team added a ``forbid`` on credits to the
home's policies, and removed a compromised agent's permission from ``config.json``: on the
running ``serve`` (JSON API), ``mcp serve`` and ``cradle-kg worker`` the next credit still
executed, until a restart.

Now the runtime reads ``config.json`` and the policy files again before a decision when
they changed (a ``stat`` per file and call, nothing parsed while none did): the forbid
denies the next call, under the new policy-set version, journaled
(``policyset.activated``) before the decision names it; the permission removed stops the
agent's next call while the other agent goes on. A file that no longer loads denies every
proposal, saying why (``policy_set_unloadable``, ``config_unloadable``), until it loads
again; the set that loads again is journaled again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.config import Limit, load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.server.auth import issue_agent_token

from .homes import FREEZE, credit, json_api
from .mcp_http import MALLORY, ROOT, Client, Served, fresh, serve, token_for

pytestmark = pytest.mark.usefixtures("journal_backend")

def _narrow(home: Path, agent: str) -> None:
    """The operator takes the agent's permissions away (it stays declared)."""
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "permissions": tuple(p for p in config.permissions if p.subject != agent)}))


def _activations(rt: Runtime) -> list[str]:
    return [e.subject for e in rt.journal.events() if e.kind == "policyset.activated"]


def test_a_forbid_added_denies_the_next_call_on_the_api(tmp_path: Path) -> None:
    home = fresh(tmp_path, "api-home")
    with Runtime(home, graph_sync=False) as rt, json_api(rt) as client:
        ledger = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        out = client.post("/api/proposals", headers=ledger, json=credit("c1")).json()
        assert out["status"] == "executed", out
        first = out["decision"]["policy_version"]

        (home / "policies" / "incident.cedar").write_text(FREEZE)  # the server keeps running
        out = client.post("/api/proposals", headers=ledger, json=credit("c2")).json()
        assert out["status"] == "denied", out  # before: executed
        assert any("credits are frozen" in r for r in out["reasons"]), out
        second = out["decision"]["policy_version"]
        assert second != first
        # journaled as a start journals it, before the decision naming it
        assert _activations(rt) == ["policyset:" + first, "policyset:" + second]
        activated = next(e for e in rt.journal.events() if e.kind == "policyset.activated"
                         and e.subject == "policyset:" + second)
        assert "incident-freeze" in activated.payload["policy_ids"]
        decided = [e for e in rt.journal.events() if e.kind == "decision.made"]
        assert decided[-1].seq > activated.seq

        # a file that does not load: every call is denied, saying why
        (home / "policies" / "incident.cedar").write_text("forbid(principal, action")
        out = client.post("/api/proposals", headers=ledger, json=credit("c3", amount=5)).json()
        assert out["status"] == "denied", out
        assert out["decision"]["reason_codes"] == ["policy_set_unloadable"], out
        assert any("incident.cedar" in r for r in out["reasons"]), out

        # the incident is over: the set loads again, journaled again, calls go through
        (home / "policies" / "incident.cedar").unlink()
        out = client.post("/api/proposals", headers=ledger, json=credit("c4")).json()
        assert out["status"] == "executed", out
        assert out["decision"]["policy_version"] == first
        assert _activations(rt)[-1] == "policyset:" + first


def test_a_permission_removed_stops_the_next_call_on_the_api(tmp_path: Path) -> None:
    home = fresh(tmp_path, "perm-home")
    with Runtime(home, graph_sync=False) as rt, json_api(rt) as client:
        mallory = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, MALLORY)}
        ledger = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        out = client.post("/api/proposals", headers=mallory,
                          json=credit("m1", agent=MALLORY)).json()
        assert out["status"] == "executed", out

        _narrow(home, MALLORY)
        out = client.post("/api/proposals", headers=mallory,
                          json=credit("m2", agent=MALLORY)).json()
        assert out["status"] == "denied", out  # before: executed
        assert out["decision"]["reason_codes"] == ["not_permitted"], out
        out = client.post("/api/proposals", headers=ledger, json=credit("l1")).json()
        assert out["status"] == "executed", out  # the other agent goes on

        # a limit added during the incident counts at once too
        config = load_config(home / "config.json")
        save_config(home / "config.json", config.model_copy(update={"limits": (
            Limit(scope="agent", subject=AGENT, window_seconds=3600, max_calls=1),)}))
        out = client.post("/api/proposals", headers=ledger, json=credit("l2")).json()
        assert out["status"] != "executed", out  # before: executed
    intents = [e for e in _events(home) if e.kind == "action.intent"]
    assert [e.actor for e in intents] == [MALLORY, AGENT]


def _events(home: Path) -> list[Any]:
    with Runtime(home, graph_sync=False) as rt:
        return list(rt.journal.events())


class Worker:
    """A running ``cradle-kg worker``: one proposal in, one outcome out."""

    def __init__(self, home: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cradle_kg", "worker", "--home", str(home),
             "--recover-every", "0"], cwd=ROOT, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def submit(self, proposal: dict[str, object]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(proposal).encode() + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read().decode() if self.proc.stderr else ""
        return dict(json.loads(line))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def test_a_running_worker_follows_the_config_and_fails_closed(tmp_path: Path) -> None:
    home = fresh(tmp_path, "worker-home")
    with Runtime(home, graph_sync=False):
        pass
    worker = Worker(home)
    try:
        assert worker.submit(credit("w1", agent=MALLORY))["status"] == "executed"
        _narrow(home, MALLORY)
        out = worker.submit(credit("w2", agent=MALLORY))
        assert out["status"] == "denied", out  # before: executed
        saved = (home / "config.json").read_text()
        (home / "config.json").write_text(saved[:-10])  # a file that does not load
        out = worker.submit(credit("w3"))
        assert out["status"] == "denied", out  # before: executed (the start's config)
        assert out["decision"]["reason_codes"] == ["config_unloadable"], out
        assert any("config.json" in r for r in out["reasons"]), out
        (home / "config.json").write_text(saved)
        assert worker.submit(credit("w4"))["status"] == "executed"
        (home / "policies" / "incident.cedar").write_text(FREEZE)
        out = worker.submit(credit("w5"))
        assert out["status"] == "denied", out  # before: executed
        assert any("credits are frozen" in r for r in out["reasons"]), out
    finally:
        worker.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(fresh(tmp_path, "mcp-home"))


def test_a_forbid_added_denies_the_next_call_over_mcp(served: Served) -> None:
    ledger = Client(served.url, token_for(served.home, AGENT))
    try:
        first = ledger.call("demo.ledger.credit", {"account": "acct-1", "amount": 100})
        assert first["result"]["isError"] is False, first
        (served.home / "policies" / "incident.cedar").write_text(FREEZE)
        again = ledger.call("demo.ledger.credit", {"account": "acct-1", "amount": 100})
        assert again["result"]["isError"] is True, again  # before: executed
        assert "credits are frozen" in json.dumps(again), again
    finally:
        ledger.close()
    intents = [e for e in served.events() if e.kind == "action.intent"]
    assert len(intents) == 1
