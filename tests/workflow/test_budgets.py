"""Budgets: three levels, the strictest wins, alert at 80 %, refusal at 100 %, no fallback."""

from __future__ import annotations

import pytest

from cradle_kg import Runtime
from cradle_kg.workflow import Budget, BudgetBook, Engine
from cradle_kg.workflow.budgets import Level
from cradle_kg.workflow.examples import invoice_triage
from tests.workflow.conftest import recorded, triage

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


MESSAGE = {"sender": "a@b.test", "subject": "Invoice", "body": "Pay.", "account": "acct-1",
           "amount": 5}
COST = invoice_triage().step("classify").cost  # type: ignore[attr-defined]


def _set(rt: Runtime, level: Level, subject: str, limit: float) -> None:
    rt.context.append([BudgetBook(rt.journal).set_event(Budget(level=level, subject=subject,
                                                        limit=limit), by="user:ops",
                                                 now=rt.clock())])


def _kinds(rt: Runtime, kind: str) -> list[dict[str, object]]:
    return [e.payload for e in rt.journal.events_of_kind(kind)]


def _run(rt: Runtime, n: int, *answers: str) -> list[object]:
    engine = Engine(rt, client=recorded(*(answers or [triage("invoice")] * n)))
    return [engine.start(invoice_triage(), MESSAGE) for _ in range(n)]


@pytest.mark.parametrize(("tenant", "workflow", "invocation", "strictest"), [
    (10 * COST, 3 * COST, 100 * COST, "workflow"),
    (2 * COST, 3 * COST, 100 * COST, "tenant"),
    (10 * COST, 10 * COST, 0.5 * COST, "invocation"),
])
def test_the_strictest_budget_refuses(wf_rt: Runtime, tenant: float, workflow: float,
                                      invocation: float, strictest: str) -> None:
    wf = invoice_triage()
    _set(wf_rt, "tenant", wf.tenant, tenant)
    _set(wf_rt, "workflow", wf.id, workflow)
    _set(wf_rt, "invocation", "*", invocation)
    allowed = int(min(tenant, workflow) // COST) if strictest != "invocation" else 0
    statuses = _run(wf_rt, allowed + 1)
    assert [s.status for s in statuses[:allowed]] == ["waiting_human"] * allowed  # type: ignore[attr-defined]
    refused = statuses[-1]
    assert (refused.status, refused.code) == ("failed", f"budget_exceeded_{strictest}")  # type: ignore[attr-defined]
    tasks = _kinds(wf_rt, "task.opened")
    assert [t["code"] for t in tasks] == [f"budget_exceeded_{strictest}"]
    # never a silent fallback: no further model call, and every call used the step's model
    calls = _kinds(wf_rt, "model.called")
    assert len(calls) == allowed
    assert {c["model"] for c in calls} <= {wf.step("classify").model}  # type: ignore[attr-defined]


def test_alert_once_at_eighty_percent(wf_rt: Runtime) -> None:
    _set(wf_rt, "workflow", "invoice-triage", 5 * COST)
    _run(wf_rt, 3)
    assert _kinds(wf_rt, "budget.alert") == []  # 3/5 = 60 %
    _run(wf_rt, 1)
    alerts = _kinds(wf_rt, "budget.alert")
    assert len(alerts) == 1 and alerts[0]["ratio"] == pytest.approx(0.8)
    _run(wf_rt, 1)
    assert len(_kinds(wf_rt, "budget.alert")) == 1  # 100 %: no second alert for one budget
    assert _kinds(wf_rt, "budget.refused") == []
    assert _run(wf_rt, 1)[0].code == "budget_exceeded_workflow"  # type: ignore[attr-defined]


def test_the_retry_is_charged_and_can_be_refused(wf_rt: Runtime) -> None:
    _set(wf_rt, "invocation", "*", 1 * COST)
    status = _run(wf_rt, 1, "not json", triage("invoice"))[0]
    assert status.code == "budget_exceeded_invocation"  # type: ignore[attr-defined]
    assert len(_kinds(wf_rt, "model.called")) == 1


def test_budgets_cli(wf_home: object) -> None:
    from typer.testing import CliRunner

    from cradle_kg.cli import app
    from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS

    runner = CliRunner()
    home = str(wf_home)
    assert runner.invoke(app, ["budgets", "set", "--level", "tenant", "--subject", "default",
                               "--limit", "3", "--as", APPROVER, "--home", home],
                         env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]}).exit_code == 0
    bad = runner.invoke(app, ["budgets", "set", "--level", "planet", "--limit", "3",
                              "--as", APPROVER, "--home", home])
    assert bad.exit_code == 2
    shown = runner.invoke(app, ["budgets", "status", "--home", home, "--format", "json"])
    assert shown.exit_code == 0 and '"limit": 3.0' in shown.output  # every budget, at a glance
