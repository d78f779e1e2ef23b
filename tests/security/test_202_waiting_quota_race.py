"""Two writers asking at once no longer pass ``waiting_per_agent`` by one each.

Finding (thirteenth attack review, left open): ``test_191`` bounds what waits for a person
on one agent's behalf (``input_limits.waiting_per_agent``), counted from the journal when
one more approval is to be asked — but counted before the append, outside the journal's
writer's lock. Two processes on one journal (two ``serve`` workers, a ``serve`` and a
``cradle-kg worker``) each counted what waited, each found room for one, and each asked:
at a limit of 1, two closures waited in the approvers' inbox — the limit passed by one per
writer.

Now the count is made again by the journal itself, in the append's serialised transaction
(``storage.WaitingCap`` on the ``approval.requested`` event, as ``UsageCap`` holds rate and
cost limits; a workflow run an agent's token starts carries it on ``workflow.started``):
the second asker is refused (429 ``quota_exceeded``), nothing of its proposal journaled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.loop import approval_flow
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")


def _close(n: int) -> dict[str, object]:
    return {"id": f"close-{n}", "task_id": f"task-{n}", "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.close_account",
                       "target": f"ledger:acct-{n}", "arguments": {"account": f"acct-{n}"}}}


def test_two_writers_asking_at_once_keep_the_limit(ledger_home: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(ledger_home / "config.json")
    save_config(ledger_home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update={"waiting_per_agent": 1})}))
    with Runtime(ledger_home, graph_sync=False) as first, \
            Runtime(ledger_home, graph_sync=False) as second, \
            json_api(first) as one, json_api(second) as other:
        headers = {"Authorization": "Bearer "
                   + issue_agent_token(first.home, first.config, AGENT)}
        counted = approval_flow.check_waiting
        answers: list[Any] = []
        asked: list[bool] = []

        def race(*args: Any, **kwargs: Any) -> Any:
            found = counted(*args, **kwargs)  # the first writer found room for one …
            if not asked:  # … and the second asks in between, on the other writer
                asked.append(True)
                answers.append(other.post("/api/proposals", headers=headers, json=_close(2)))
            return found

        monkeypatch.setattr(approval_flow, "check_waiting", race)
        out = one.post("/api/proposals", headers=headers, json=_close(1))
        monkeypatch.setattr(approval_flow, "check_waiting", counted)

        assert answers[0].status_code == 200, answers[0].text
        assert answers[0].json()["status"] == "awaiting_approval"
        assert out.status_code == 429, out.text  # before: 200, a second one waiting
        assert out.json()["detail"]["error"] == "quota_exceeded", out.text
        _, waiting = first.journal.approval_requests(undecided=True, requested_by=AGENT,
                                                     limit=0)
        assert waiting == 1  # before: 2
        proposals = [e.subject for e in first.journal.events()
                     if e.kind == "proposal.received"]
        assert proposals == ["close-2"]  # nothing of the refused one journaled
