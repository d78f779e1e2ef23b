"""An approver's scopes bound the workflow human steps they answer, as the approvals.

Finding (eleventh attack review): an approver may be limited to scopes (``"scopes":
["account_closure"]`` in ``config.json``), and an approval a policy asks within a scope
(``@approval_scope``) is decided only by an approver holding it (``test_30``). A
workflow's human step is the same kind of gate — ``credit-review``'s ``review`` decides
whether the agent's credit is made — but a step could name no scope, and any approver
answered it: Carol, trusted with account closures only, answered ``pay`` to the review of
a credit of 900 and the credit was made (a file naming the scope its reviews belong to,
``scope: payments``, was refused as an unknown key: a workflow had no way to say who may
review it).

Now a human step may name the scope it is asked within (``scope:``), and only an approver
holding it (or ``*``) answers it: anyone else is refused (``ApprovalError``: 403 over the
JSON API, ``error:`` on the command line), nothing journaled, the step still waits; an
approver holding the scope answers as before. A step naming no scope is answered by an
approver holding ``*``, as an approval asked within none (``test_181``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server.api import make_router
from cradle_kg.workflow import runner

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "credit-review.yaml"
INPUT = {"account": "acct-3", "amount": 900, "reason": "refund"}
CAROL, DAVE = "user:carol", "user:dave"
TOKENS = {CAROL: "carol-closures-only", DAVE: "dave-payments", APPROVER: DEMO_TOKENS[APPROVER]}


def _home(home: Path) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers,
        Approver(id=CAROL, scopes=("account_closure",), token_hash=token_hash(TOKENS[CAROL])),
        Approver(id=DAVE, scopes=("payments",), token_hash=token_hash(TOKENS[DAVE])))}))
    (home / "workflows").mkdir(exist_ok=True)
    text = FLOW.read_text(encoding="utf-8")
    scoped = text.replace("    kind: human\n", "    kind: human\n    scope: payments\n")
    assert scoped != text
    (home / "workflows" / "credit-review.yaml").write_text(scoped, encoding="utf-8")


def _start(rt: Runtime, run: str) -> None:
    started = runner.start(runner.open_engine(rt), runner.find_definition(
        rt.home.root, "credit-review"), INPUT, run_id=run)
    assert started["status"] == "waiting_human", started


def _kinds(rt: Runtime, run: str) -> list[str]:
    return [e.kind for e in rt.journal.events(run_id=run)]


def test_an_approver_outside_the_steps_scope_cannot_answer_it(ledger_home: Path) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        _start(rt, "credit-1")
        described = runner.status(runner.open_engine(rt), "credit-1")["steps"][0]
        assert described["scope"] == "payments"
        before = _kinds(rt, "credit-1")
        with pytest.raises(ApprovalError, match="payments"):
            runner.decide(rt, runner.open_engine(rt), "credit-1", "review", by=CAROL,
                          token=TOKENS[CAROL], answer="pay")
        assert _kinds(rt, "credit-1") == before  # nothing journaled: the step still waits
        done = runner.decide(rt, runner.open_engine(rt), "credit-1", "review", by=DAVE,
                             token=TOKENS[DAVE], answer="pay")
        assert done["status"] == "completed"
        assert "action.intent" in _kinds(rt, "credit-1")


def test_the_api_refuses_it_and_the_approver_with_the_scope_answers(ledger_home: Path
                                                                     ) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        _start(rt, "credit-2")
        before = _kinds(rt, "credit-2")
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            def answer(who: str) -> tuple[int, dict[str, object]]:
                r = client.post("/api/steps/credit-2/review/decide", json={"answer": "pay"},
                                headers={"Authorization": f"Bearer {TOKENS[who]}"})
                return r.status_code, r.json()

            status, body = answer(CAROL)  # before: 200 `completed`, the credit made
            assert status == 403, body
            assert "payments" in json.dumps(body)
            assert _kinds(rt, "credit-2") == before
            status, body = answer(APPROVER)  # `*`
            assert status == 200 and body["status"] == "completed", body
