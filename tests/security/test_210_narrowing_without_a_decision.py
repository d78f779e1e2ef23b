"""A limit narrowed in ``config.json`` holds at doors that make no decision, at once.

Attack: a long-lived server (``serve``) follows the home's ``config.json`` —
``Runtime.refresh()`` puts what it says in force — but only before a *decision* (a
proposal). The other doors read the configuration the last decision left in force: a
workflow run an agent's token starts (``waiting_per_agent``), an evidence upload
(``evidence_uploads_per_hour``). During an incident the operator lowers the agent's
``waiting_per_agent`` to stop its runs filling the inbox; an agent that only starts runs
(and proposes nothing) kept the old limit for as long as the server ran.

What must hold: a run the agent's token starts after the file was narrowed is held to
the narrowed limit (429 ``quota_exceeded``, no ``workflow.started``), with no proposal in
between; and a ``config.json`` that no longer loads refuses the start (fail closed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

FLOW = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "credit-review.yaml"


def _limit(home: Path, cap: int) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update={"waiting_per_agent": cap})}))


def _credit(i: int) -> dict[str, Any]:
    return {"input": {"account": f"acct-{i}", "amount": 400, "reason": "urgent"}}


def _started(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events() if e.kind == "workflow.started")


def test_a_narrowed_waiting_limit_holds_for_runs_at_once(ledger_home: Path) -> None:
    _limit(ledger_home, 5)
    (ledger_home / "workflows").mkdir(exist_ok=True)
    (ledger_home / "workflows" / "credit-review.yaml").write_text(
        FLOW.read_text(encoding="utf-8"), encoding="utf-8")
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        for i in range(2):
            out = client.post("/api/workflows/credit-review/runs", headers=agent,
                              json=_credit(i))
            assert out.status_code == 200, out.text
        _limit(ledger_home, 1)  # the incident: the operator narrows the agent
        out = client.post("/api/workflows/credit-review/runs", headers=agent, json=_credit(3))
        assert out.status_code == 429, out.text  # before: started under the old limit
        assert out.json()["detail"]["error"] == "quota_exceeded"
        assert _started(rt) == 2
        _limit(ledger_home, 5)
        (ledger_home / "config.json").write_text("{", encoding="utf-8")  # no longer loads
        out = client.post("/api/workflows/credit-review/runs", headers=agent, json=_credit(4))
        assert out.status_code in (401, 403, 429, 503), out.text
        assert _started(rt) == 2
