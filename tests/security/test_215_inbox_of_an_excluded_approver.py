"""An approver holding ``*`` is not shown what they are excluded from deciding.

Finding (left open by the twelfth and thirteenth reviews, ``test_198``): an inbox filtered
an approver limited to scopes, but an approver holding ``*`` was shown everything — the
approvals of the agent that acts for them (``excluded`` in its request: they may never
approve it), the escalations of that agent's runs (``test_179``), the human steps of its
workflow runs (``test_67``) and of a run they started themselves (``test_177``). In the
demo home Alice, whom the ledger agent acts for, was shown every item of her own agent and
refused each one she answered; Bob was shown the review of the credit he asked for.

Now the inbox an approver reads (``/api/inbox``, ``/api/overview``'s ``inbox``, a run
view's ``inbox``; ``cradle-kg inbox --as WHO``) holds only what they may decide, filtered
and paged in the derived tables' queries: an approval's excluded identities are derived
(``approval_exclusions``, SQLite format 10, PostgreSQL migration 12) and compared by
``audit verify``; a task's and a step's are their run's agent, the person it acts for in
the configuration and who started the run, as deciding them checks.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Proposal, Runtime, Verdict
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, REQUESTER
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.loop.gate1.findings import Finding
from cradle_kg.records import Agent, Permission
from cradle_kg.workflow import runner
from tests.security.homes import json_api

from ..inprocess import run_cli
from .test_181_unscoped_limited_approver import BIG_CREDITS, FLOW, _credit

pytestmark = pytest.mark.usefixtures("journal_backend")

CLERK = "agent:clerk"


def _home(home: Path) -> None:
    config = load_config(home / "config.json")
    [ledger] = config.agents
    save_config(home / "config.json", config.model_copy(update={
        "agents": (*config.agents, Agent(id=CLERK, permitted_scopes=ledger.permitted_scopes)),
        "permissions": (*config.permissions, Permission(
            subject=CLERK, action_type="demo.ledger.*", resource_selector="ledger:*"))}))
    (home / "policies" / "credits.cedar").write_text(BIG_CREDITS, encoding="utf-8")
    (home / "workflows").mkdir(exist_ok=True)
    (home / "workflows" / "credit-review.yaml").write_bytes(FLOW.read_bytes())


def _always_repair(p: Proposal, spec: object) -> list[Finding]:
    return [Finding(code="odd", message="repair it", verdict=Verdict.REPAIR)]


def _escalated(rt: Runtime, run: str, agent: str) -> str:
    for i in range(rt.config.repair_budget + 1):
        out = rt.submit({"id": f"{run}-p{i}", "task_id": run, "agent_id": agent, "action": {
            "action_type": "demo.ledger.credit", "target": "ledger:a",
            "arguments": {"account": "a", "amount": 3}}})
    assert out.status is OutcomeStatus.ESCALATED, out
    [task] = [t.id for t in open_tasks(rt.journal, run_id=f"run:{run}")]
    return task


def _pending(rt: Runtime) -> dict[str, str]:
    """The ledger agent's credit awaiting a person (Alice excluded: it acts for her), the
    clerk's (nobody but the clerk excluded), a review of a run nobody started and one of a
    run Bob started (both the ledger agent's workflow), an escalation of each agent."""
    mine = rt.submit(_credit("p-big"))
    assert mine.approval is not None
    clerks = rt.submit({**_credit("p-clerk"), "agent_id": CLERK})
    assert clerks.approval is not None
    engine = runner.open_engine(rt)
    flow = runner.find_definition(rt.home.root, "credit-review")
    for run, by in (("credit-u", None), ("credit-b", APPROVER)):
        started = runner.start(engine, flow, {"account": "acct-5", "amount": 400,
                                              "reason": "refund"}, run_id=run, by=by)
        assert started["status"] == "waiting_human", started
    rt.register_validator("demo.ledger.credit", _always_repair, name="always")
    return {"mine": mine.approval.id, "clerks": clerks.approval.id,
            "step_u": "credit-u/review", "step_b": "credit-b/review",
            "esc_mine": _escalated(rt, "esc-l", AGENT), "esc_clerk": _escalated(rt, "esc-c", CLERK),
            "mine_run": mine.run_id}


def _inbox_of(rt: Runtime, who: str, **params: Any) -> list[str]:
    with json_api(rt) as client:
        answer = client.get("/api/inbox", params=params,
                            headers={"Authorization": f"Bearer {DEMO_TOKENS[who]}"})
        assert answer.status_code == 200, answer.text
        return [str(i["id"]) for i in answer.json()]


def _count(rt: Runtime, who: str) -> int:
    with json_api(rt) as client:
        answer = client.get("/api/overview",
                            headers={"Authorization": f"Bearer {DEMO_TOKENS[who]}"})
        assert answer.status_code == 200, answer.text
        return int(answer.json()["inbox"])


def test_an_approver_holding_all_scopes_sees_only_what_they_may_decide(
        ledger_home: Path) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        ids = _pending(rt)
        order = ["mine", "clerks", "step_u", "step_b", "esc_mine", "esc_clerk"]
        alices = [ids["clerks"], ids["esc_clerk"]]
        bobs = [ids[k] for k in order if k != "step_b"]
        assert _inbox_of(rt, REQUESTER) == alices  # before: all six
        assert _count(rt, REQUESTER) == 2  # before: 6
        assert _inbox_of(rt, APPROVER) == bobs  # before: his own run's review too
        assert _count(rt, APPROVER) == 5
        # paged and filtered by kind in the query, counted alike
        assert _inbox_of(rt, REQUESTER, limit=1, offset=1) == [ids["esc_clerk"]]
        assert _inbox_of(rt, REQUESTER, kind="approval") == [ids["clerks"]]
        assert _inbox_of(rt, REQUESTER, kind="step") == []
        assert _inbox_of(rt, APPROVER, kind="step") == [ids["step_u"]]
        assert _inbox_of(rt, APPROVER, limit=2, offset=2) == [ids["step_u"], ids["esc_mine"]]
        with json_api(rt) as client:  # the run view of her agent's credit, as Alice
            view = client.get(f"/api/runs/{ids['mine_run']}/view", headers={
                "Authorization": f"Bearer {DEMO_TOKENS[REQUESTER]}"})
            assert view.status_code == 200, view.text
            assert view.json()["inbox"] == [] and view.json()["inbox_total"] == 0
        # the derived exclusions are checked by audit verify like the other tables
        report = rt.journal.verify()
        assert report.intact, report.reason

    # the command line: `--as` an approver is their inbox; the operator's, everything
    res = run_cli("inbox", "--as", REQUESTER, "--format", "json", "--home", str(ledger_home))
    assert res.returncode == 0, res.stderr
    assert [i["id"] for i in json.loads(res.stdout)] == alices
    res = run_cli("inbox", "--format", "json", "--home", str(ledger_home))
    assert res.returncode == 0, res.stderr
    assert [i["id"] for i in json.loads(res.stdout)] == [ids[k] for k in order]


def test_a_removed_principal_is_shown_its_former_agents_escalations(ledger_home: Path) -> None:
    """A task's and a step's exclusions are read from the configuration as deciding them
    reads them; an approval's were fixed when it was asked for."""
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        ids = _pending(rt)
    config = load_config(ledger_home / "config.json")
    save_config(ledger_home / "config.json", config.model_copy(update={"agents": tuple(
        a.model_copy(update={"acts_for": None}) for a in config.agents)}))
    with Runtime(ledger_home, graph_sync=False) as rt:
        assert _inbox_of(rt, REQUESTER) == [ids[k] for k in (
            "clerks", "step_u", "step_b", "esc_mine", "esc_clerk")]


def test_tampered_exclusions_are_reported_and_an_older_journal_is_upgraded(
        ledger_home: Path, journal_backend: str) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        ids = _pending(rt)
        if journal_backend != "sqlite":
            return  # PostgreSQL's migration: tests/storage (migration 12)
        path = rt.journal.path  # type: ignore[attr-defined]
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DELETE FROM approval_exclusions WHERE who = ?", (REQUESTER,))
    conn.close()
    with Runtime(ledger_home, graph_sync=False) as rt:
        report = rt.journal.verify()
        assert not report.intact and "approval_exclusions" in str(report.reason)
    # a format 9 journal (no such table) is upgraded: the rows derived from its events
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TABLE approval_exclusions")
    conn.execute("PRAGMA user_version = 9")
    conn.close()
    with Runtime(ledger_home, graph_sync=False) as rt:
        assert rt.journal.verify().intact
        assert _inbox_of(rt, REQUESTER) == [ids["clerks"], ids["esc_clerk"]]
