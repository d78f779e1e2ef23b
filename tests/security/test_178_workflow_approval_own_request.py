"""The person who started a workflow run does not approve its tool steps' actions.

Finding (eleventh attack review, beside ``test_177``): an approval is never given by the
agent that asked for it, the person it acts for, or the one it acts on behalf of
(``excluded`` in the request). A workflow's tool step proposes as the workflow's agent, so
the person who started the run over ``POST /api/workflows/{name}/runs`` (any approver may)
was none of those: Bob started ``close-account`` for ``acct-9`` — an irreversible closure
that the demo's policy sends to a person (``demo-close-needs-approval``) — then approved
the closure his own run asked for, and the account was closed: a request and its approval
by one person.

Now an approval asked for in a run that recorded who started it (``started_by``:
``test_177``) excludes that person too, in the request itself (``excluded``), so the
decision is refused (403, ``approval.refused`` journaled as for any excluded approver) and
an approval they gave would cover nothing; another approver approves, and the run walks on
as before.

In process, through the app's real router, on both journals.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.loop.runtime import Runtime
from tests.security.homes import add_approver, json_api
from tests.test_shell import CLOSE_FLOW

pytestmark = pytest.mark.usefixtures("journal_backend")

CAROL = "user:carol"
TOKENS = {APPROVER: DEMO_TOKENS[APPROVER], CAROL: "carol-token"}


def _intents(rt: Runtime, run: str) -> int:
    return sum(e.kind == "action.intent" for e in rt.journal.events(run_id=run))


def test_who_started_a_run_does_not_approve_its_actions(ledger_home: Path) -> None:
    add_approver(ledger_home, CAROL, TOKENS[CAROL])
    (ledger_home / "workflows").mkdir(exist_ok=True)
    (ledger_home / "workflows" / "close-account.yaml").write_text(CLOSE_FLOW)
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        def as_(who: str) -> dict[str, str]:
            return {"Authorization": f"Bearer {TOKENS[who]}"}

        began = client.post("/api/workflows/close-account/runs", headers=as_(APPROVER),
                            json={"input": {"account": "acct-9"}, "run_id": "close-9"})
        assert began.status_code == 200, began.text
        assert began.json()["status"] == "waiting_approval", began.text
        # Bob's pending view leaves it out (test_253); Carol's holds it
        assert client.get("/api/approvals", params={"pending": True},
                          headers=as_(APPROVER)).json() == []
        [pending] = client.get("/api/approvals", params={"pending": True},
                               headers=as_(CAROL)).json()
        approval = pending["approval"]["id"] if "approval" in pending else pending["id"]

        own = client.post(f"/api/approvals/{approval}/approve", headers=as_(APPROVER),
                          json={})
        assert own.status_code == 403, own.text  # before: 200, the account closed
        assert APPROVER in own.text
        assert _intents(rt, "close-9") == 0
        assert any(e.kind == "approval.refused"
                   for e in rt.journal.events(run_id="close-9"))

        other = client.post(f"/api/approvals/{approval}/approve", headers=as_(CAROL),
                            json={})
        assert other.status_code == 200, other.text
        assert other.json()["workflow"]["status"] == "completed", other.text
        assert _intents(rt, "close-9") == 1
