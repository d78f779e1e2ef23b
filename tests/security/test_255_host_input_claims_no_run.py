"""The host's input into a new run claims it only for a proposal that will be written.

Finding (left open by ``test_216``): a governed session (``mcp serve``'s ``_meta``
``cradle-kg/input``, LangGraph's) that records the host's input into a run nobody owns
yet wrote the agent's ``run.claimed`` and the input (``evidence.collected``,
``input.recorded``) before gate 1 — the input must be in the run for lineage to read it.
Past ``refusals_per_agent_per_hour`` the proposal was then refused with nothing of it
journaled, but the claim and the input stayed: three events per refused call, each naming
a new run, without end — what ``test_216`` closed for a call without input.

Now, when the agent's refusals (or waiting) quota has no room left, the call is decided
first as it will be with the input in its run (lineage reads the input from an index of
its own, nothing written) and refused there when the quota would refuse it: nothing is
journaled but the quota's one record of the hour. A call the input makes allowable still
claims its run, records the input and runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.demo.scenario import AGENT
from cradle_kg.integrations.calls import GovernedSession, HostInput, HostMeta
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

from .test_204_refused_proposals_quota import _credit, _quota

pytestmark = pytest.mark.usefixtures("journal_backend")

#: a credit's account must come from a trusted source (the person's request): without the
#: input, denied; with an input naming it, allowed
FROM_REQUEST = """
@id("account-from-request")
forbid(principal, action, resource) when {
  context.lineage.arguments has "account" &&
  !context.lineage.arguments["account"].trusted_origin
};
"""


def _call(rt: Runtime, session: str, text: str, amount: int) -> str:
    meta = HostMeta(input=HostInput(text=text, author="user:emma"))
    result = GovernedSession(rt, AGENT, session_id=session).call(
        "demo.ledger.credit", {"account": "acct-2", "amount": amount}, meta)
    return result.status


def test_a_refused_call_with_input_claims_no_run(ledger_home: Path) -> None:
    _quota(ledger_home, 1)
    (ledger_home / "policies" / "from-request.cedar").write_text(FROM_REQUEST, "utf-8")
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        out = client.post("/api/proposals", headers=agent, json=_credit("big-0", 5000))
        assert out.status_code == 200 and out.json()["status"] == "denied", out.text
        head = rt.journal.head()
        for i in range(5):  # refused by gate 1 (too big), past the quota: a new run each
            assert _call(rt, f"big-{i}", "credit acct-2 please", 9000) == "refused"
        for i in range(3):  # the input names no account: denied by lineage, past the quota
            assert _call(rt, f"vague-{i}", "a credit please", 20) == "refused"
        # before: a claim and the input (three events) per refused call
        assert [e.kind for e in rt.journal.events(since_seq=head[0])] == ["quota.reached"]

        # the input names the account: allowed, so its run is claimed and the input kept
        assert _call(rt, "ok", "credit acct-2 with 20, please", 20) == "executed"
        kinds = [e.kind for e in rt.journal.events(run_id=f"run:{AGENT}/ok")]
        assert kinds[:3] == ["run.claimed", "evidence.collected", "input.recorded"], kinds
        assert "action.intent" in kinds
        assert rt.journal.verify().intact


def test_room_left_asks_no_preview(ledger_home: Path) -> None:
    """Below the quota a call with input into a new run is written as before — refused by
    gate 1, its denial journaled with the claim and the input it was decided with."""
    (ledger_home / "policies" / "from-request.cedar").write_text(FROM_REQUEST, "utf-8")
    with Runtime(ledger_home, graph_sync=False) as rt:
        assert _call(rt, "vague", "a credit please", 20) == "denied"
        kinds = [e.kind for e in rt.journal.events(run_id=f"run:{AGENT}/vague")]
        assert kinds[:3] == ["run.claimed", "evidence.collected", "input.recorded"], kinds
        assert "proposal.received" in kinds and "decision.made" in kinds
