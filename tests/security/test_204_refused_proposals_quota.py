"""An agent cannot grow the journal without bound with proposals gate 1 refuses.

Finding (thirteenth attack review, left open): a proposal denied or sent back at gate 1
(``deny``, ``clarify``, ``repair``) is journaled whole — ``proposal.received`` with the
proposal, ``decision.made``, ``run.outcome``: up to ``max_bytes`` (1 MiB) each — and no
limit counted it: the rate and cost limits count executed calls (``action.intent``), a
refused one is none. An agent's token posted credits of 5,000 (forbidden by the demo's
policy) with 60 kB of text in them to ``POST /api/proposals`` as fast as the server took
them, and each one was 60 kB more of journal, without end.

Now an agent has at most ``input_limits.refusals_per_agent_per_hour`` refused proposals
journaled in any hour (1,000 by default; ``null``: no limit), counted from the journal's
usage buckets (``refusals.agent``, derived from the ``decision.made`` that refuses it) by
the journal itself, under its writer's lock with the append: past it, the proposal is
refused and nothing of it is journaled — 429 ``quota_exceeded`` over the JSON API,
``refused`` over MCP. What the agent may do still runs; the journal still says what was
refused and why, up to the quota; ``audit verify`` rebuilds the count from the events.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import QuotaExceededError
from cradle_kg.inputs import DEFAULT_LIMITS
from cradle_kg.integrations.calls import GovernedSession
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api
from tests.security.server_times import age_server_times

pytestmark = pytest.mark.usefixtures("journal_backend")

QUOTA = 3
PAD = "x" * 60_000


def _credit(pid: str, amount: int, memo: str = "") -> dict[str, Any]:
    arguments: dict[str, Any] = {"account": "acct-1", "amount": amount}
    facts = [{"subject": "ledger:acct-1", "predicate": "ex:note", "object": memo,
              "source": "agent"}] if memo else []
    return {"id": pid, "task_id": "task-" + pid, "agent_id": AGENT, "facts": facts,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-1",
                       "arguments": arguments}}


def _quota(home: Path, quota: int | None) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(
            update={"refusals_per_agent_per_hour": quota})}))


def _proposals(rt: Runtime) -> list[str]:
    return [e.subject for e in rt.journal.events() if e.kind == "proposal.received"]


def test_the_default_bounds_an_agents_refusals() -> None:
    assert DEFAULT_LIMITS.refusals_per_agent_per_hour == 1000  # before: no such bound


def test_refused_proposals_past_the_quota_are_not_journaled(ledger_home: Path) -> None:
    _quota(ledger_home, QUOTA)
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        for i in range(QUOTA):
            out = client.post("/api/proposals", headers=agent,
                              json=_credit(f"big-{i}", 5000, PAD))
            assert out.status_code == 200, out.text
            assert out.json()["status"] == "denied", out.text
        assert _proposals(rt) == [f"big-{i}" for i in range(QUOTA)]
        size = sum(len(str(e.payload)) for e in rt.journal.events())

        # one more refused proposal: 429, nothing of it journaled (before: 200, denied,
        # one more 60 kB proposal in the journal — and so on without end)
        out = client.post("/api/proposals", headers=agent, json=_credit("big-more", 5000, PAD))
        assert out.status_code == 429, out.text
        assert out.json()["detail"]["error"] == "quota_exceeded"
        assert "refusals_per_agent_per_hour" in out.json()["detail"]["hint"]
        assert _proposals(rt) == [f"big-{i}" for i in range(QUOTA)]
        grown = sum(len(str(e.payload)) for e in rt.journal.events()) - size
        assert grown < 1000, grown  # at most the new run's claim, not the proposal
        # MCP's path (a governed session): refused the same way
        result = GovernedSession(rt, AGENT).call("demo.ledger.credit",
                                                 {"account": "acct-2", "amount": 9000})
        assert result.status == "refused", result.text
        assert result.structured["reason_codes"] == ["quota_exceeded"]

        # what the agent may do still runs: the quota counts refusals, not calls
        ok = client.post("/api/proposals", headers=agent, json=_credit("small", 250))
        assert ok.status_code == 200 and ok.json()["status"] == "executed", ok.text
        # a refused proposal asked again gets its recorded answer (nothing new written)
        again = client.post("/api/proposals", headers=agent, json=_credit("big-0", 5000, PAD))
        assert again.status_code == 200 and again.json()["status"] == "denied", again.text
        assert _proposals(rt) == [*(f"big-{i}" for i in range(QUOTA)), "small"]

        # the count is derived from the events: audit verify recomputes it and agrees
        report = rt.journal.verify()
        assert report.intact, report.reason


def test_the_window_frees_up(ledger_home: Path) -> None:
    _quota(ledger_home, 1)
    with Runtime(ledger_home, graph_sync=False) as rt:
        assert rt.submit(_credit("a", 5000)).status == "denied"
        with pytest.raises(QuotaExceededError):
            rt.submit(_credit("b", 5000))
        # an hour later the refusal has left the window: the next one is journaled
        later = rt.clock() + timedelta(hours=1, seconds=2)
        rt.clock = lambda: later
        # on PostgreSQL the hour is the server's (test_608): its recorded second moves
        age_server_times(rt, timedelta(hours=1, seconds=2))
        assert rt.submit(_credit("b", 5000)).status == "denied"
        assert _proposals(rt) == ["a", "b"]


def test_no_limit_when_the_operator_says_so(ledger_home: Path) -> None:
    _quota(ledger_home, None)
    with Runtime(ledger_home, graph_sync=False) as rt:
        for i in range(QUOTA + 2):
            assert rt.submit(_credit(f"n{i}", 5000)).status == "denied"
        assert len(_proposals(rt)) == QUOTA + 2
        assert rt.journal.verify().intact
