"""An approver limited to scopes ended workflow runs they may not answer.

Finding (review of the eighteenth round's own changes): ``cradle-kg workflow cancel`` (and
``POST /api/workflows/runs/{run}/cancel``) asked of the canceller only that they may decide
each *approval* the run waits on. A run waiting on a human step, or on nothing yet (cut
before its review, ``test_287``), was ended by any approver: Carol, trusted with account
closures only (``"scopes": ["account_closure"]``), who may not answer ``credit-review``'s
review (asked within no scope: ``test_181``), cancelled the run — its review out of every
inbox, the requester's credit never decided by the desk that owns it, nothing she could
have done by answering it.

Now a cancel is bound as an answer is: the canceller must be one who may answer each step
the run waits on (its scope, or ``*`` for a step asked within none) and decide each
approval it waits on; a run waiting on neither (cut, or between steps) is for an approver
holding ``*``. Refused: ``ApprovalError`` (exit 1, 403), nothing written, the run waits.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.loop.runtime import Runtime
from cradle_kg.storage import NewEvent
from cradle_kg.workflow import runner
from cradle_kg.workflow.cancel import cancel
from tests.security.test_181_unscoped_limited_approver import CAROL, _home

pytestmark = pytest.mark.usefixtures("journal_backend")

INPUT = {"account": "acct-5", "amount": 400, "reason": "refund"}


def _start(rt: Runtime, run: str) -> None:
    out = runner.start(runner.open_engine(rt), runner.find_definition(rt.home.root,
                                                                      "credit-review"),
                       INPUT, run_id=run)
    assert out["status"] == "waiting_human", out


def test_a_limited_approver_cannot_cancel_a_step_they_may_not_answer(ledger_home: Path
                                                                      ) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        _start(rt, "credit-c")
        head = rt.journal.head()
        with pytest.raises(ApprovalError, match="may not"):  # before: cancelled
            cancel(rt, runner.open_engine(rt), "credit-c", by=CAROL, token="carol",
                   reason="not mine to end")
        assert rt.journal.head() == head
        steps = runner.status(runner.open_engine(rt), "credit-c")["steps"]
        assert {s["id"]: s["state"] for s in steps}["review"] != "cancelled", steps
        done = cancel(rt, runner.open_engine(rt), "credit-c", by=APPROVER,
                      token=DEMO_TOKENS[APPROVER], reason="withdrawn")
        assert done["status"] == "cancelled" and done["closed_steps"] == ["review"]


def test_a_run_waiting_on_nothing_is_cancelled_by_an_approver_holding_all(ledger_home: Path
                                                                          ) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        _start(rt, "credit-d")
        # the run cut before its review: its started event alone (as test_287's cut run)
        engine = runner.open_engine(rt)
        started = engine._started("credit-d")
        rt.context.append([NewEvent(run_id="credit-e", kind=started.kind,
                                    subject=started.subject, actor=started.actor,
                                    at=rt.clock(), payload=started.payload,
                                    if_new_run=True)])
        head = rt.journal.head()
        with pytest.raises(ApprovalError, match="may not"):  # before: cancelled
            cancel(rt, runner.open_engine(rt), "credit-e", by=CAROL, token="carol",
                   reason="not mine to end")
        assert rt.journal.head() == head
        done = cancel(rt, runner.open_engine(rt), "credit-e", by=APPROVER,
                      token=DEMO_TOKENS[APPROVER], reason="cut, withdrawn")
        assert done["status"] == "cancelled" and done["closed_steps"] == []
