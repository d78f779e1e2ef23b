"""Finding: a plan's run (``Runtime.run_plan``) never replayed.

``run_plan`` journals ``plan.started`` (the plan), submits each step through the whole
loop in the plan's order, stops or skips by its abort policy, and journals
``plan.finished`` (its status, each step's outcome, the steps skipped). Strict replay
knew no trigger for ``plan.started``: every journal holding a plan failed ``replay
--strict`` — "diverges at seq 1 (`plan.started`): no replay trigger produces
`plan.started`" when the steps ran in the plan's run, "it is in run `run:plan:…`, which
no proposal or workflow starts" (``test_438``) when each step named a run of its own. An
auditor could prove no plan, and what the plan's ``plan.finished`` said (which steps ran,
which were skipped and why) was never made again by anything.

Now a ``plan.started`` is replayed as the runtime runs it: the recorded plan run again by
the code that ran it (``plans.run_plan``), each step submitted in the sandbox, the steps'
events (in the plan's run or the runs its steps name) and ``plan.finished`` compared hash
for hash. A journal as written replays exactly; one whose author rewrote the plan's
finish (chain recomputed with the public code) diverges at that event. A live replay
runs the plan again too (its steps as they are decided now, skipped or aborted as the
plan says), where before it submitted each recorded step alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import AbortPolicy, Plan, PlanStep, Proposal, Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.records import AuditEvent
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.workflow.difference import LiveSettings, live_replay
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli
from tests.security.handed import rechained
from tests.security.homes import credit


def _plan(plan_id: str, *, own_runs: bool) -> Plan:
    """Three credits, the second above the agents' limit (denied): the third, which
    depends on it, is aborted. ``own_runs``: each step names a run of its own."""
    def step(pid: str, amount: int, *after: str) -> PlanStep:
        run = {"run": f"run:{plan_id}-{pid}"} if own_runs else {}
        return PlanStep(proposal=Proposal.model_validate(credit(pid, amount=amount, **run)),
                        depends_on=after)
    return Plan(id=plan_id, steps=(step(f"{plan_id}-s1", 100),
                                   step(f"{plan_id}-s2", 5000, f"{plan_id}-s1"),
                                   step(f"{plan_id}-s3", 7, f"{plan_id}-s2")),
                abort_policy=AbortPolicy.ABORT_REMAINING)


def _planned(home: Path) -> None:
    prepare_home(home)
    with Runtime(home, graph_sync=False) as rt:
        for plan in (_plan("pa", own_runs=False), _plan("pb", own_runs=True)):
            out = rt.run_plan(plan)
            assert out.status == "incomplete", out
            assert list(out.skipped) == [f"{plan.id}-s3"], out
        assert rt.submit(Proposal.model_validate(credit("p-alone"))).status.value == "executed"


def test_a_plan_run_replays_as_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _planned(home)  # the suite's journal (SQLite or PostgreSQL)
    # before: "diverges at seq 1 (`plan.started`): no replay trigger produces `plan.started`"
    report = strict_replay(home)
    assert {"run:plan:pa", "run:plan:pb", "run:task-p-alone"} <= set(report.runs), report
    # a plan's run named alone replays too (the rest of the journal copied)
    assert strict_replay(home, ["run:plan:pb"]).runs == ["run:plan:pb"]
    cli = run_cli("replay", "--strict", "--home", str(home))
    assert cli.returncode == 0, cli.stdout + cli.stderr


def _finish_forged(before: AuditEvent | None, ev: AuditEvent) -> tuple[str, dict[str, Any]]:
    """The author's plan ``pa`` finished ``executed``, every step executed, none skipped."""
    del before
    if ev.kind == "plan.finished" and ev.subject == "pa":
        return ev.subject, {"status": "executed", "skipped": {},
                            "outcomes": dict.fromkeys(("pa-s1", "pa-s2", "pa-s3"),
                                                      "executed")}
    return ev.subject, ev.payload


@pytest.mark.parametrize("rewrite", ["finish", "abort_policy"])
def test_a_plan_run_rewritten_by_its_author_diverges(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rewrite: str) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)  # a handed home: its own file
    home = tmp_path / "home"
    _planned(home)
    forged: list[int] = []

    def author(before: AuditEvent | None, ev: AuditEvent) -> tuple[str, dict[str, Any]]:
        if rewrite == "finish":
            subject, payload = _finish_forged(before, ev)
        elif ev.kind == "plan.started" and ev.subject == "pb":  # "go on past a denial"
            subject, payload = ev.subject, {"plan": {**ev.payload["plan"],
                                                     "abort_policy": "continue"}}
        else:
            subject, payload = ev.subject, ev.payload
        if payload is not ev.payload:
            forged.append(ev.seq)
        return subject, payload

    rechained(home, tmp_path / "forged", author)
    assert len(forged) == 1
    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(tmp_path / "forged")
    if rewrite == "finish":  # made again from the steps' outcomes, it differs there
        assert caught.value.seq == forged[0], caught.value.message
        assert "payload.outcomes" in caught.value.message, caught.value.message
    else:  # under "continue" the third step is skipped for its failed dependency, not
        # aborted: the finish made again says so where the record says "aborted"
        assert caught.value.seq is not None and caught.value.seq > forged[0], \
            caught.value.message
        assert "plan.finished" in caught.value.message, caught.value.message
    cli = run_cli("replay", "--strict", "--home", str(tmp_path / "forged"))
    assert cli.returncode == 1, cli.stdout + cli.stderr


def test_a_live_replay_runs_the_plan_again(tmp_path: Path) -> None:
    """``replay --live`` under a policy that denies the plan's first step: the plan stops
    there (before: each recorded step was submitted alone, the second's decision reported
    unchanged as if the plan had reached it); under one that lets the second through, the
    plan submits it (its write is not replayed live: the plan stops after it)."""
    home = tmp_path / "home"
    _planned(home)
    demo = (home / "policies" / "demo.cedar").read_text()
    assert "amount > 1000" in demo
    report: dict[str, list[tuple[str, Any, Any]]] = {}
    for name, limit in (("loose", 10_000), ("tight", 50)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "demo.cedar").write_text(demo.replace("amount > 1000", f"amount > {limit}"))
        live = live_replay(home, ["run:plan:pa"], LiveSettings(policies=folder))
        report[name] = [(c.subject, c.recorded, c.replayed) for c in live.changes
                        if c.category == "decision"]
    assert ("pa-s2", "deny", "allow") in report["loose"], report
    assert ("pa-s1", "allow", "deny") in report["tight"], report
    assert ("pa-s2", "deny", None) in report["tight"], report  # never reached
