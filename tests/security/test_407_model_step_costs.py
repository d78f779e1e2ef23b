"""A model step's declared cost is a finite number of 0 or more, at most ``MAX_CALL_COST``.

Finding (twenty-third review: workflows and budgets): a workflow file's ``cost`` was any
number of 0 or more. Its calls are charged, summed, in the journal's budget buckets: a file
declaring ``cost: 1.0e+308`` (or an integer of 309 digits) took the sum of its tenant, its
workflow and each run past the largest float. On SQLite the tenant's spend read ``inf`` —
``budgets status`` said so, and any budget set afterwards refused every call of the tenant
for good; on PostgreSQL the second such call's reservation failed to append (``value out of
range: overflow``): a ``JournalError`` out of ``start``, where the step should have run or
been refused — the two journals disagreeing on one workflow. A step written in Python took
any ``cost`` at all: ``nan`` (``spent + nan > limit`` is false: never refused), a negative
one (each call gave budget back), ``"5"`` (a ``TypeError`` in the engine's budget check).

Now a model step's cost is checked where a workflow is built (``Workflow``, a file's steps
too): a number, not a boolean, finite, 0 to ``MAX_CALL_COST`` — a file's, refused with its
line (``WorkflowFileError``), a Python step's with ``WorkflowError``; nothing runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.errors import CradleError, WorkflowFileError
from cradle_kg.workflow import (
    BudgetBook,
    Engine,
    ModelResponse,
    ModelStep,
    RecordedClient,
    Workflow,
    WorkflowError,
)
from cradle_kg.workflow.budgets import MAX_CALL_COST
from cradle_kg.workflow.definitions import load_file

pytestmark = pytest.mark.usefixtures("journal_backend")


def _flow(tmp_path: Path, cost: str) -> Path:
    flow = tmp_path / "w.yaml"
    flow.write_text(f"""workflow: w
version: "1"
agent: {AGENT}
input: {{type: object, properties: {{x: {{type: string}}}}, required: [x]}}
steps:
  - id: ask
    kind: model
    model: m1
    prompt: say something
    cost: {cost}
    inputs: {{x: input.x}}
    output: {{type: object, properties: {{a: {{type: string}}}}, required: [a]}}
""", encoding="utf-8")
    return flow


def _two_runs(home: Path, flow: Path) -> object:
    """What loading the file and starting two runs of it did: the loader's refusal, the
    error a start raised, or the tenant's spend after both."""
    try:
        workflow = load_file(flow)
    except WorkflowFileError as exc:
        return exc
    with Runtime(home, graph_sync=False) as rt:
        try:
            for i in range(2):
                client = RecordedClient([ModelResponse(model="m1", content='{"a": "b"}')],
                                        label="test")
                Engine(rt, client=client).start(workflow, {"x": str(i)})
        except CradleError as exc:
            return f"{type(exc).__name__}: {exc.message}"
        return BudgetBook(rt.journal).spent("tenant", "default")


@pytest.mark.parametrize("cost", ["1.0e+308", "1" + "0" * 308, str(int(MAX_CALL_COST) + 1)])
def test_a_file_declaring_a_cost_past_the_limit_is_refused_with_its_line(
        tmp_path: Path, cost: str) -> None:
    home = tmp_path / "home"
    prepare_home(home)
    found = _two_runs(home, _flow(tmp_path, cost))
    # before: SQLite's spend read inf, PostgreSQL's second reservation failed to append
    assert isinstance(found, WorkflowFileError), f"loaded and ran: {found!r}"
    assert found.line == 10 and "cost" in found.message, found.message


def test_a_file_declaring_the_largest_cost_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    prepare_home(home)
    assert _two_runs(home, _flow(tmp_path, str(int(MAX_CALL_COST)))) == 2 * MAX_CALL_COST


class _In(BaseModel):
    x: str


class _Out(BaseModel):
    a: str


@pytest.mark.parametrize("cost", [float("nan"), float("inf"), -1.0, 1e308, "5", True])
def test_a_python_model_step_with_a_cost_no_budget_can_hold_is_refused(cost: Any) -> None:
    step = ModelStep(id="ask", input_model=_In, output_model=_Out, inputs={"x": "input.x"},
                     prompt="say something", prompt_version="p1", model="m1", cost=cost)
    # before: built, then never refused (nan), refunded (-1) or a TypeError ("5")
    with pytest.raises(WorkflowError, match="cost"):
        Workflow(id="w", version="1", input_model=_In, steps=(step,), agent=AGENT,
                 definition="tests:w")
