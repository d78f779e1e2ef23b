"""The person who started a workflow run does not answer its human steps.

Finding (eleventh attack review): a workflow's human step is a second person's review —
``credit-review``'s ``review`` decides whether the agent's credit is made — and ``test_67``
keeps the workflow's agent and the person it acts for from answering it. But
``POST /api/workflows/{name}/runs`` lets any approver start a run, naming its input, and
the run did not record who started it: Bob started a credit of 900 to an account of his
choosing and then answered its review ``pay`` with the same token, and the credit was
made — the request and its review by one person, the four-eyes check the step stands for
given by its requester.

Now a run started over the JSON API records who started it (``started_by`` in its
``workflow.started``; a replay starts it again with it), and its human steps are refused
to that person (``ApprovalError``: 403, nothing journaled, the step still waits); another
approver answers it as before. A run started on the command line or in process (the
operator's; no identity) records no one, as before.

In process, through the app's real router, on both journals.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.loop.runtime import Runtime
from cradle_kg.workflow.replay import strict_replay
from tests.security.homes import add_approver, json_api

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "credit-review.yaml"
CAROL = "user:carol"
TOKENS = {APPROVER: DEMO_TOKENS[APPROVER], CAROL: "carol-token"}


def _kinds(rt: Runtime, run: str) -> list[str]:
    return [e.kind for e in rt.journal.events(run_id=run)]


def test_who_started_a_run_does_not_review_it(ledger_home: Path) -> None:
    add_approver(ledger_home, CAROL, TOKENS[CAROL])
    (ledger_home / "workflows").mkdir(exist_ok=True)
    (ledger_home / "workflows" / "credit-review.yaml").write_bytes(FLOW.read_bytes())
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        def as_(who: str) -> dict[str, str]:
            return {"Authorization": f"Bearer {TOKENS[who]}"}

        began = client.post("/api/workflows/credit-review/runs", headers=as_(APPROVER),
                            json={"input": {"account": "acct-5", "amount": 900,
                                            "reason": "refund"}})
        assert began.status_code == 200, began.text
        assert began.json()["status"] == "waiting_human"
        run = str(began.json()["run_id"])
        before = _kinds(rt, run)

        def answer(who: str) -> tuple[int, dict[str, object]]:
            r = client.post(f"/api/steps/{run}/review/decide", headers=as_(who),
                            json={"answer": "pay"})
            return r.status_code, r.json()

        status, body = answer(APPROVER)  # before: 200 `completed`, the credit made
        assert status == 403, body
        assert APPROVER in str(body)
        assert _kinds(rt, run) == before  # nothing journaled: the step still waits
        assert "action.intent" not in _kinds(rt, run)
        status, body = answer(CAROL)
        assert status == 200 and body["status"] == "completed", body
        assert "action.intent" in _kinds(rt, run)
        started = next(e for e in rt.journal.events(run_id=run)
                       if e.kind == "workflow.started")
        assert started.payload["started_by"] == APPROVER
    # a replay starts it again as it was started, hash for hash
    assert strict_replay(ledger_home, [run]).runs == [run]
