"""A human step of a workflow is decided once, whoever answers at the same moment.

Finding: ``step decide`` (and ``POST /api/steps/{run}/{step}/decide``) checked that the
step still waited, then appended ``human.decided`` — two steps, not one. Two approvers
answering together (two ``cradle-kg step decide`` processes, the web page and the CLI)
both passed the check: the journal held two contradicting decisions of one step, both
people were told their answer was taken (``completed``) — yet the run had walked on with
the first (``reject``), while the fold that status and strict replay read takes the last
(``decided[key] = …``): the journal's decision for the step said ``pay``. The decision
is now written only over the events it was decided on (``if_last`` on the step's
subject, as an approval's decision is): of two racing answers exactly one is journaled;
the other reads again and is refused (the step no longer waits).

The race is made deterministic here: the first answer's read of the run is held while
the second answer is decided in full (the real code path, two runtimes on one home).

What holds (checked here): a second answer after the first is refused; an unknown answer
is refused (``InputError``) with nothing journaled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError
from cradle_kg.workflow import Engine
from cradle_kg.workflow.definitions import load_file
from cradle_kg.workflow.runner import decide
from tests.workflow.conftest import ADMIN, ADMIN_TOKEN, recorded, wf_home  # noqa: F401

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = """\
workflow: two-people
version: '1'
agent: agent:ledger-bot
input: {type: object, properties: {note: {type: string}}, required: [note]}
steps:
  - id: route
    kind: human
    question: "pay or reject? {note}"
    inputs: {note: input.note}
    answers: [pay, reject]
"""


def _decisions(rt: Runtime, run: str) -> list[Any]:
    return [e.payload["decision"] for e in rt.journal.events(run_id=run)
            if e.kind == "human.decided"]


def test_two_answers_at_once_journal_one(wf_home: Path, tmp_path: Path) -> None:  # noqa: F811
    flow = tmp_path / "two.yaml"
    flow.write_text(FLOW)
    with Runtime(wf_home, graph_sync=False) as first, \
            Runtime(wf_home, graph_sync=False) as second:
        engine = Engine(first, client=recorded())
        run = engine.start(load_file(flow), {"note": "invoice 7"}).run_id
        other = Engine(second, client=recorded())
        read = engine.workflow_of
        raced: list[Any] = []
        reads: list[str] = []

        def held_read(run_id: str) -> Any:
            seen = read(run_id)
            reads.append(run_id)
            if len(reads) == 1:  # the engine's own read before it writes the decision
                # (``runner.decide`` reads the workflow alone, ``Engine.workflow``): the
                # second answer lands now, in full, from the other runtime
                raced.append(decide(second, other, run, "route", by=ADMIN,
                                    token=ADMIN_TOKEN, answer="reject"))
            return seen

        engine.workflow_of = held_read  # type: ignore[method-assign]
        try:
            late: Any = decide(first, engine, run, "route", by=APPROVER,
                               token=DEMO_TOKENS[APPROVER], answer="pay")
        except InputError as exc:
            late = exc
        assert raced and raced[0]["status"] == "completed"
        assert isinstance(late, InputError), f"both answers were taken: {late}"
        assert "does not wait" in late.message
        assert [d["answer"] for d in _decisions(first, run)] == ["reject"]


def test_a_second_answer_and_an_unknown_answer_are_refused(
        wf_home: Path, tmp_path: Path) -> None:  # noqa: F811
    flow = tmp_path / "two.yaml"
    flow.write_text(FLOW)
    with Runtime(wf_home, graph_sync=False) as rt:
        engine = Engine(rt, client=recorded())
        run = engine.start(load_file(flow), {"note": "invoice 8"}).run_id
        before = len(list(rt.journal.events()))
        with pytest.raises(InputError, match="not an allowed answer"):
            decide(rt, engine, run, "route", by=APPROVER, token=DEMO_TOKENS[APPROVER],
                   answer="maybe")
        assert len(list(rt.journal.events())) == before
        decide(rt, engine, run, "route", by=APPROVER, token=DEMO_TOKENS[APPROVER],
               answer="pay")
        with pytest.raises(InputError, match="does not wait"):
            decide(rt, engine, run, "route", by=ADMIN, token=ADMIN_TOKEN, answer="reject")
        assert [d["answer"] for d in _decisions(rt, run)] == ["pay"]
