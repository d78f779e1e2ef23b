"""A proposal refused past the agent's refusals quota leaves no claimed run behind.

Finding (left open by ``test_204``): an entry point that speaks for an authenticated agent
(``POST /api/proposals``, MCP's governed session) made a new run id the agent's first —
``run.claimed``, a few hundred bytes — and then submitted the proposal; past
``input_limits.refusals_per_agent_per_hour`` the proposal was refused (429) with nothing
of it journaled, but the claim stayed: an agent's token posting denied proposals, each
naming a new run, still grew the journal by one event (and its derived rows) per call,
without end.

Now the run is checked first (another agent's: refused, nothing written, as before) and
claimed only when the proposal's own events are about to be written, after gate 1 and an
early count of the agent's refusals: a proposal refused past the quota writes nothing at
all. What the agent may do still claims its new run and runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.demo.scenario import AGENT
from cradle_kg.integrations.calls import GovernedSession
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

from .test_191_pending_approvals_flood import _cap, _close
from .test_204_refused_proposals_quota import _credit, _quota

pytestmark = pytest.mark.usefixtures("journal_backend")


def _claims(rt: Runtime) -> list[str]:
    return [e.run_id for e in rt.journal.events() if e.kind == "run.claimed"]


def test_a_refused_proposal_past_the_quota_claims_no_run(ledger_home: Path) -> None:
    _quota(ledger_home, 1)
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        out = client.post("/api/proposals", headers=agent, json=_credit("big-0", 5000))
        assert out.status_code == 200 and out.json()["status"] == "denied", out.text
        assert _claims(rt) == ["run:task-big-0"]
        head = rt.journal.head()
        for i in range(1, 21):  # each in a run of its own
            out = client.post("/api/proposals", headers=agent, json=_credit(f"big-{i}", 5000))
            assert out.status_code == 429, out.text
        for i in range(5):  # MCP's path: a session per run
            result = GovernedSession(rt, AGENT, session_id=f"mcp-{i}").call(
                "demo.ledger.credit", {"account": "acct-2", "amount": 9000})
            assert result.status == "refused", result.text
        # before: 25 claims more, one per refused call; now the quota's one record of the
        # hour alone (tests/security/test_217)
        assert [e.kind for e in rt.journal.events(since_seq=head[0])] == ["quota.reached"]
        assert _claims(rt) == ["run:task-big-0"]

        # what the agent may do still claims its new run and executes
        ok = client.post("/api/proposals", headers=agent, json=_credit("small", 250))
        assert ok.status_code == 200 and ok.json()["status"] == "executed", ok.text
        session = GovernedSession(rt, AGENT, session_id="mcp-ok")
        result = session.call("demo.ledger.credit", {"account": "acct-2", "amount": 20})
        assert result.status == "executed", result.text
        # the session's run lives in its agent's namespace (test_235)
        assert session.run_id == f"run:{AGENT}/mcp-ok"
        assert _claims(rt) == ["run:task-big-0", "run:task-small", session.run_id]
        assert rt.journal.verify().intact


def test_another_agents_run_is_still_refused_first(ledger_home: Path) -> None:
    """The check that a run is the agent's still comes before anything is written."""
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        rt.claim_run("run:task-theirs", "agent:other")
        head = rt.journal.head()
        out = client.post("/api/proposals", headers=agent, json=_credit("theirs", 5000))
        assert out.status_code == 403, out.text
        assert rt.journal.head() == head


def test_a_proposal_refused_past_the_waiting_quota_claims_no_run(ledger_home: Path) -> None:
    """The same for ``waiting_per_agent``: counted before the claim, in a new run."""
    _cap(ledger_home, 1)
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        out = client.post("/api/proposals", headers=agent, json=_close("c0", "acct-0"))
        assert out.status_code == 200 and out.json()["status"] == "awaiting_approval"
        for i in range(1, 11):
            out = client.post("/api/proposals", headers=agent, json=_close(f"c{i}", f"a{i}"))
            assert out.status_code == 429, out.text
        assert _claims(rt) == ["run:task-c0"]  # before: one claim per refused call
