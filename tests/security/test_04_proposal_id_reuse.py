"""Item 4: a proposal id is used once per run.

The attack: submit ``p-r6`` crediting 5000 (denied by policy), then ``p-r6`` again
crediting 50. Before the fix the second one ran the tool (+50), then integrity rule 6
aborted the commit and the outcome read ``failed``. Afterwards the reuse is refused at
gate 1 before any tool runs; the identical proposal gets its recorded outcome back; two
processes racing on one id give one effect; the graph never merges two submissions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, ledger_for
from cradle_kg.records import OutcomeStatus
from tests.conftest import make_config
from tests.racers import ForkedPython

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def credit(pid: str, amount: int, *, account: str = "acct-1",
           run_id: str | None = "run:r6") -> dict[str, Any]:
    p: dict[str, Any] = {"id": pid, "task_id": "task-r6", "agent_id": AGENT,
                         "action": {"action_type": "demo.ledger.credit",
                                    "target": "ledger:" + account,
                                    "arguments": {"account": account, "amount": amount}}}
    if run_id is not None:
        p["run_id"] = run_id
    return p


def _balance(rt: Runtime, account: str = "acct-1") -> int:
    return ledger_for(rt).balance(account)


def _tool_calls(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events() if e.kind == "action.intent")


def test_reused_id_with_other_content_is_refused_before_any_tool_runs(rt: Runtime) -> None:
    first = rt.submit(credit("p-r6", 5000))
    assert first.status is OutcomeStatus.DENIED
    second = rt.submit(credit("p-r6", 50))
    assert second.status is OutcomeStatus.DENIED
    assert second.decision is not None
    assert "proposal_id_reused" in second.decision.reason_codes
    assert _balance(rt) == 0
    assert _tool_calls(rt) == 0
    # no human task was needed: nothing is in an unknown state
    assert not [e for e in rt.journal.events() if e.kind == "human_task.opened"]


def test_reuse_after_an_execution_is_refused_too(rt: Runtime) -> None:
    assert rt.submit(credit("p-x", 50)).status is OutcomeStatus.EXECUTED
    for variant in (credit("p-x", 51), credit("p-x", 50, account="acct-2"),
                    {**credit("p-x", 50), "step": 1},
                    {**credit("p-x", 50), "evidence_refs": []} | {"confidence": 0.5}):
        out = rt.submit(variant)
        assert out.status is OutcomeStatus.DENIED, variant
        assert out.decision is not None and "proposal_id_reused" in out.decision.reason_codes
    assert _balance(rt) == 50
    assert _balance(rt, "acct-2") == 0
    assert _tool_calls(rt) == 1


def test_the_same_id_in_the_default_run_is_the_same_run(rt: Runtime) -> None:
    # run_id omitted -> run:<task_id>; the second is the same run written out
    assert rt.submit(credit("p-d", 10, run_id=None)).status is OutcomeStatus.EXECUTED
    out = rt.submit(credit("p-d", 20, run_id="run:task-r6"))
    assert out.status is OutcomeStatus.DENIED
    assert _balance(rt) == 10


def test_identical_resubmission_is_answered_with_the_recorded_outcome(rt: Runtime) -> None:
    denied = rt.submit(credit("p-r6", 5000))
    again = rt.submit(credit("p-r6", 5000))
    assert again.status is OutcomeStatus.DENIED
    assert again.replayed
    done = rt.submit(credit("p-ok", 50))
    redo = rt.submit(credit("p-ok", 50))
    assert done.status is OutcomeStatus.EXECUTED
    assert redo.status is OutcomeStatus.EXECUTED and redo.replayed
    assert _balance(rt) == 50
    assert _tool_calls(rt) == 1
    assert denied.decision is not None and again.decision is not None


def test_the_same_id_in_another_run_is_another_proposal(rt: Runtime) -> None:
    assert rt.submit(credit("p-r", 10, run_id="run:a")).status is OutcomeStatus.EXECUTED
    assert rt.submit(credit("p-r", 11, run_id="run:b")).status is OutcomeStatus.EXECUTED
    assert _balance(rt) == 21


def test_the_graph_never_merges_two_submissions(rt: Runtime) -> None:
    rt.submit(credit("p-r6", 5000))
    rt.submit(credit("p-r6", 50))
    rt.submit(credit("p-r6", 60))
    rt.sync_graph()
    store = rt.graph()
    assert store is not None
    rows = list(store.query(
        "PREFIX cradle: <https://w3id.org/cradle#> "
        "SELECT ?p (COUNT(DISTINCT ?d) AS ?n) WHERE { ?p a cradle:Proposal . "
        "?d cradle:evaluates ?p } GROUP BY ?p"))
    assert len(rows) == 3
    assert all(int(r["n"].value) == 1 for r in rows)


_RACER = """
import json, sys
from cradle_kg import Runtime

rt = Runtime(sys.argv[1], graph_sync=False)
out = rt.submit(json.loads(sys.argv[2]))
print(json.dumps({"status": str(out.status), "codes": list(out.decision.reason_codes)
                  if out.decision else []}))
rt.close()
"""


@pytest.mark.slow
def test_two_processes_racing_on_one_id_give_one_effect(home: Path) -> None:
    Runtime(home, config=make_config()).close()
    from cradle_kg.config import save_config
    save_config(home / "config.json", make_config())
    # four processes of their own, forked from the fork server (no interpreter start each)
    procs = [ForkedPython(_RACER, [str(home), json.dumps(credit("p-race", 10 + i))],
                          env=os.environ, cwd=os.getcwd()) for i in range(4)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    statuses = sorted(r["status"] for r in results)
    assert statuses.count("executed") == 1, results
    assert statuses.count("denied") == 3, results
    with Runtime(home, graph_sync=False) as rt:
        assert _tool_calls(rt) == 1
        assert rt.journal.verify().intact


def test_a_refused_reuse_does_not_shadow_the_recorded_outcome(rt: Runtime) -> None:
    assert rt.submit(credit("p-s", 50)).status is OutcomeStatus.EXECUTED
    assert rt.submit(credit("p-s", 70)).status is OutcomeStatus.DENIED
    again = rt.submit(credit("p-s", 50))
    assert again.status is OutcomeStatus.EXECUTED and again.replayed
    assert _balance(rt) == 50


def test_a_new_attempt_is_a_new_submission_kept_apart_in_the_graph(rt: Runtime) -> None:
    """``attempt`` is how a proposal is tried again on purpose: a new submission, with its
    own node — so a deny of attempt 0 never reads as a deny of attempt 1 (rule 6)."""
    assert rt.submit(credit("p-a", 5000)).status is OutcomeStatus.DENIED
    out = rt.submit({**credit("p-a", 50), "attempt": 1})
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert not [e for e in rt.journal.events() if e.kind == "human_task.opened"]
    assert rt.submit({**credit("p-a", 60), "attempt": 1}).status is OutcomeStatus.DENIED
    assert _balance(rt) == 50
