"""An id an agent chooses is asked for as that id, never as another object's IRI.

Finding (the twenty-second review, provenance answers): a named query's parameter of an
id kind (``run``, ``task``, ``fact``, ``identity``, …) was read as an IRI whenever its
value began with ``<``, ``http://``, ``https://`` or ``urn:`` — and run ids and task ids
are the agent's to choose. The web page's run view asks ``run-timeline`` and
``run-graph`` with the run's id, as ``cradle-kg query`` does:

* an agent whose run was named ``urn:x-quiet:1`` (or whose task was ``http://t/1``) was
  not in the answers at all — its run's timeline, graph and its task's effects were
  empty, while its credit executed (the id was read as the IRI ``urn:x-quiet:1``, which
  names nothing);
* an agent whose run was named after another run's graph IRI
  (``https://w3id.org/cradle/run/payroll``) was shown, asked by that id, the events of
  the other agent's run ``payroll`` as its own (and ``<…>`` likewise).

Now a value is an IRI only in ``<…>`` or when it begins with the IRIs of that kind
(``https://w3id.org/cradle/run/`` for a run, ``…/id/task/`` for a task): anything else
is an id. And no id an agent (or a workflow's caller) chooses — run, task, proposal — may
begin with ``<`` or ``https://w3id.org/cradle/``, the graph's own IRIs: refused in one
line, nothing journaled. A real runtime on a temporary home, its Oxigraph store, the
named queries through ``cradle-kg query``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import ProposalError
from cradle_kg.graph.iris import RUN_BASE

from .answers import answer
from .homes import credit
from .mcp_http import MALLORY, two_agent_home

QUIET_RUN, QUIET_TASK = "urn:x-quiet:1", "http://t/1"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = two_agent_home(tmp_path_factory.mktemp("iris") / "home")
    with Runtime(root) as rt:
        assert rt.submit(credit("p-1", run="payroll", task="task-pay")).status.value == (
            "executed")
        quiet = rt.submit(credit("p-q", run=QUIET_RUN, task=QUIET_TASK, agent=MALLORY))
        assert quiet.status.value == "executed"
    return root


def test_a_run_and_a_task_named_like_iris_are_in_the_answers(home: Path) -> None:
    kinds = [r["kind"] for r in answer(home, "run-timeline", run=QUIET_RUN)]
    # before: [] — the run's events were asked for as graph `urn:x-quiet:1`
    assert "action.intent" in kinds and "run.outcome" in kinds, kinds
    assert answer(home, "run-graph", run=QUIET_RUN), "before: no edge at all"
    effects = answer(home, "task-effects", task=QUIET_TASK)
    assert [r["executedBy"].rsplit("/", 1)[1] for r in effects] == ["agent%3Amallory"]
    # a graph IRI, and an IRI in <…>, are still read as IRIs
    for value in (RUN_BASE + "payroll", f"<{RUN_BASE}payroll>"):
        assert {r["actor"].rsplit("/", 1)[1] for r in answer(
            home, "run-timeline", run=value)} >= {"agent%3Aledger-assistant"}


@pytest.mark.parametrize("field", ["run_id", "task_id", "id"])
@pytest.mark.parametrize("value", [RUN_BASE + "payroll", f"<{RUN_BASE}payroll>",
                                   "https://w3id.org/cradle/id/task/task-pay"])
def test_an_id_in_the_graphs_own_iris_is_refused(home: Path, field: str, value: str) -> None:
    proposal = credit("p-x", run="mallory-own", agent=MALLORY) | {field: value}
    with Runtime(home) as rt:
        before = rt.journal.head()
        # before: accepted, and `run-timeline` asked with this run's id answered with the
        # events of run `payroll`, another agent's
        with pytest.raises(ProposalError, match="graph's own"):
            rt.submit(proposal)
        assert rt.journal.head() == before
