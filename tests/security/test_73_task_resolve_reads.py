"""What closing a human task reads does not grow with the tasks of the journal.

Finding: ``tasks resolve`` and ``POST /api/tasks/{task}/resolve`` (``resolve_task``) found
the task to close by folding *every* human task of the journal — every
``human_task.opened`` and ``human_task.resolved`` event of every run, read and decoded —
once to check it was open, and once more to answer. An agent opens tasks at will: once a
run's repair budget is spent (3 by default), each further proposal a policy or validator
sends back for repair opens one (``repair_budget_exhausted``), and nothing counts
proposals that run nothing. So every close by an approver — under the server's lock,
where no agent submits and no other approver decides meanwhile — decoded every task
event of the journal twice, in any run, without end: 122 rows with 40 tasks opened (20 of
them closed), 362 with 120 (now 3 and 3).

Now the task is folded from its own events (its subject, one range of ``events_subject``
— the same read its resolved-once guard, ``test_37``, already made), before and after the
write. Counted as the event rows the journal decodes (not time: the machine is shared),
on both journals.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cradle_kg import OutcomeStatus, Proposal, Runtime, Verdict
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError, UnknownNameError
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.loop.gate1.findings import Finding
from tests.conftest import proposal

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def _always_repair(p: Proposal, spec: object) -> list[Finding]:
    return [Finding(code="odd", message="repair it", verdict=Verdict.REPAIR)]


def _escalate(rt: Runtime, n: int, *, run: str = "t", register: bool = True) -> list[str]:
    """An agent's proposals sent back for repair until ``n`` human tasks are open (the
    repairing validator registered here unless the caller has: ``register``)."""
    if register:
        rt.register_validator("demo.ledger.credit", _always_repair, name="always")
    budget = rt.config.repair_budget
    for i in range(budget + n):
        out = rt.submit(proposal(f"{run}-p{i}", "demo.ledger.credit",
                                 {"account": "a", "amount": 3}, task_id=run))
        assert out.status is (OutcomeStatus.REPAIR if i < budget
                              else OutcomeStatus.ESCALATED)
    return [t.id for t in open_tasks(rt.journal, run_id=f"run:{run}")]


def _close(rt: Runtime, task: str, decoded: Callable[[], int]) -> int:
    before = decoded()
    done = rt.resolve_task(task, by=APPROVER, token=DEMO_TOKENS[APPROVER],
                           note="rolled back by hand")
    assert done.id == task and done.resolved_by == APPROVER
    assert done.resolution == "rolled back by hand"
    return decoded() - before


@pytest.mark.parametrize("n", [40, 120])
def test_closing_a_task_reads_its_own_events(rt: Runtime, decoded: Callable[[], int],
                                             n: int) -> None:
    tasks = _escalate(rt, n)
    assert len(tasks) == n
    # half of them closed already: resolved tasks used to be read again on every close
    for task in tasks[: n // 2]:
        _close(rt, task, decoded)
    rows = _close(rt, tasks[-1], decoded)
    # 5: the task's own proposal read once more since test_599 (its agent never closes it)
    assert rows <= 5, f"closing one task decoded {rows} event rows with {n} tasks open"


def test_the_fold_keeps_its_answers(rt: Runtime) -> None:
    (task, other) = _escalate(rt, 2)
    with pytest.raises(UnknownNameError, match="unknown human task"):
        rt.resolve_task("task:nope", by=APPROVER, token=DEMO_TOKENS[APPROVER], note="x")
    with pytest.raises(UnknownNameError):  # an event's subject, not a task's
        rt.resolve_task("t-p0", by=APPROVER, token=DEMO_TOKENS[APPROVER], note="x")
    rt.resolve_task(task, by=APPROVER, token=DEMO_TOKENS[APPROVER], note="done")
    with pytest.raises(InputError, match="already resolved"):
        rt.resolve_task(task, by=APPROVER, token=DEMO_TOKENS[APPROVER], note="again")
    listed = {t.id: t for t in open_tasks(rt.journal, include_resolved=True)}
    assert listed[task].resolution == "done" and listed[other].resolved_by is None
