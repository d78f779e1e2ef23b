"""An agent's run is never one of the runtime's own runs; a step's autonomy is read by itself.

Finding (the fourth attack review): the runtime journals some records in runs of its own —
every evidence blob added (``evidence``), the budgets (``budgets``), and each human step's
progressive autonomy (``autonomy:<workflow>/<step>``: its policy, learned rule, shadow,
promotion, kill switch). A proposal's ``run_id`` is the agent's to choose (``POST
/api/proposals``, an MCP call's ``cradle-kg/run``), and ``test_58`` kept proposal *ids* out
of the runtime's namespaces, not run ids: nobody had proposed in those runs, so an agent's
token claimed them. ``AutonomyBook.state`` read every event of the autonomy run, and the
engine asks it each time a run of the workflow reaches its human step: with an agent's
balance reads in ``autonomy:credit-review/review``, starting a ``credit-review`` run decoded
1 row when the run was empty, 52 when the agent had written 51 events there and 202 at 201
— without end, for every workflow run started or resumed, by anyone. A workflow could be
started (``POST /api/workflows/{name}/runs``, ``run_id``) in ``evidence`` or ``budgets``;
a run's claim is an event *about* its id, so a run named ``approval:…`` or ``task:…`` wrote
into the subjects the runtime's records are kept under.

Now a proposal's run and a workflow run's id may be none of the runtime's runs and begin
with none of its namespaces (``reserved_run`` in ``loop/proposal.py``, checked with the
proposal id's namespaces by the parser every entry point takes an agent's proposal through,
and by ``check_run_id``): one ``proposal: `run_id`: …`` refusal, nothing journaled. And a
step's stage is folded from its own autonomy events (those kinds, about
``step:<workflow>/<step>``, in that run: ``events_for_subject``), so what else a journal
written before holds in that run is skipped in the index: the same rows at 50 as at 250.
Counted as rows decoded, on both journals.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import InputError, ProposalError
from cradle_kg.evidence import EVIDENCE_RUN
from cradle_kg.integrations.calls import GovernedSession, HostMeta
from cradle_kg.integrations.proxy import TOOLS_RUN
from cradle_kg.loop.proposal import RUNTIME_RUNS
from cradle_kg.storage import NewEvent
from cradle_kg.throttling import QUOTA_RUN
from cradle_kg.workflow import Engine
from cradle_kg.workflow.autonomy import Stage, autonomy_run
from cradle_kg.workflow.budgets import BUDGET_RUN
from cradle_kg.workflow.definitions import load_file
from cradle_kg.workflow.runner import start
from tests.workflow.conftest import recorded

from ..inprocess import run_cli
from .inputcli import fresh_home
from .mcp_http import ROOT
from .reads import rows_read

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = ROOT / "examples" / "workflows" / "credit-review.yaml"
INPUT = {"account": "acct-3", "amount": 15, "reason": "refund"}
AUTONOMY = autonomy_run("credit-review", "review")
TAKEN = [AUTONOMY, EVIDENCE_RUN, BUDGET_RUN, QUOTA_RUN, TOOLS_RUN, "approval:sha256:ab12",
         "task:t-1", "Step:x"]
#: a workflow run's id has no `/` (refused before): the autonomy namespace without one
WORKFLOW_TAKEN = [*TAKEN[1:], "autonomy:credit-review"]


def _balance(pid: str, run: str) -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.balance", "target": "ledger:acct-1",
                       "arguments": {"account": "acct-1"}}}


def test_the_runtime_runs_are_the_ones_it_writes_in() -> None:
    assert {EVIDENCE_RUN, BUDGET_RUN, QUOTA_RUN, TOOLS_RUN} == RUNTIME_RUNS


@pytest.mark.parametrize("run", TAKEN)
def test_an_agent_cannot_propose_in_a_run_of_the_runtime(tmp_path: Path, run: str) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        head = rt.journal.head()
        # the parser of `POST /api/proposals`, the worker, LangGraph and `Runtime.submit`
        with pytest.raises(ProposalError, match="`run_id`"):
            rt.submit(_balance("p-1", run))
        # an MCP call naming the run in `_meta` (`cradle-kg/run`)
        session = GovernedSession(rt, AGENT)
        result = session.call("demo.ledger.balance", {"account": "acct-1"}, HostMeta(run=run))
        assert result.status == "refused" and "`run_id`" in result.structured["reasons"][0]
        # before: executed, and the run was the agent's (claimed)
        assert rt.journal.head() == head


def test_submit_on_the_command_line_refuses_it(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    file = tmp_path / "p.json"
    import json

    file.write_text(json.dumps(_balance("p-1", AUTONOMY)))
    done = run_cli("submit", str(file), "--home", str(home))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "`run_id`" in done.stderr and "unexpected" not in done.stderr


@pytest.mark.parametrize("run", WORKFLOW_TAKEN)
def test_a_workflow_cannot_start_in_a_run_of_the_runtime(tmp_path: Path, run: str) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        head = rt.journal.head()
        # `POST /api/workflows/{name}/runs` and `workflow run --run`; before: started
        with pytest.raises(InputError, match="runtime"):
            start(Engine(rt, client=recorded()), FLOW, INPUT, run_id=run)
        assert rt.journal.head() == head


def test_reaching_a_human_step_reads_the_same_whatever_the_autonomy_run_holds(
        tmp_path: Path, decoded: Callable[[], int]) -> None:
    with Runtime(fresh_home(tmp_path / "home"), graph_sync=False) as rt:
        engine = Engine(rt, client=recorded())
        wf = load_file(FLOW)
        # an operator halts the step: the stage is still read
        engine.autonomy.halt(wf.id, "review", by="user:bob", reason="audit")
        rows, written = [], 0
        for upto in (50, 250):
            # what a journal written before this change can hold there: an agent's events
            while written < upto:
                rt.context.append([NewEvent(
                    run_id=AUTONOMY, kind="proposal.received", subject=f"p-{written}",
                    actor=AGENT, at=rt.clock(), payload={"proposal_id": f"p-{written}"})])
                written += 1
            k, status = rows_read(decoded, lambda: engine.start(wf, INPUT))
            assert status.status == "waiting_human", status
            rows.append(k)
        assert engine.autonomy.state(wf.id, "review").stage is Stage.HALTED
        # before: every event of the autonomy run, each time (one row more per event)
        assert rows[0] == rows[1] <= 10, rows
