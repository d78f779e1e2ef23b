"""An agent cannot fill the approvers' inbox with escalation tasks.

Attack (beside ``test_191`` and ``test_193``): ``input_limits.waiting_per_agent`` bounds
what waits for a person on an agent's behalf — its undecided approvals and the open human
steps of its workflow's runs — but not the third kind of inbox item, the human task. In a
home where a validator or a Cedar policy sends a proposal back for repair
(``@on_deny("repair")``), an agent spends a run's repair budget and then every further
proposal sent back in that run opens one more human task (``repair_budget_exhausted``,
one per proposal id), each in every approver's inbox until someone closes it — as many as
it sends (the refusals quota slows it to ``refusals_per_agent_per_hour``, it does not
bound what waits).

What must hold: an escalation that would make the agent's open tasks, approvals and steps
more than ``waiting_per_agent`` is refused before anything of it is journaled
(``QuotaExceededError``; the quota's one ``quota.reached`` record of the hour aside),
counted under the journal's writer lock as the others are; once a person closes one, the
next escalation opens its task.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Proposal, Runtime, Verdict
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import QuotaExceededError
from cradle_kg.inputs import DEFAULT_LIMITS
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.loop.gate1.findings import Finding
from tests.conftest import make_config, proposal, register_test_tools

pytestmark = pytest.mark.usefixtures("journal_backend")

CAP = 3


def _always_repair(p: Proposal, spec: object) -> list[Finding]:
    return [Finding(code="odd", message="repair it", verdict=Verdict.REPAIR)]


@pytest.fixture
def capped(home: Path) -> Iterator[Runtime]:
    runtime = Runtime(home, config=make_config(input_limits=DEFAULT_LIMITS.model_copy(
        update={"waiting_per_agent": CAP})))
    register_test_tools(runtime)
    runtime.register_validator("demo.ledger.credit", _always_repair, name="always")
    yield runtime
    runtime.close()


def _send(rt: Runtime, pid: str) -> OutcomeStatus:
    return rt.submit(proposal(pid, "demo.ledger.credit", {"account": "a", "amount": 3},
                              task_id="flood")).status


def test_escalation_tasks_count_in_what_waits_for_the_agent(capped: Runtime) -> None:
    rt = capped
    for i in range(rt.config.repair_budget):
        assert _send(rt, f"p{i}") is OutcomeStatus.REPAIR
    for i in range(CAP):
        assert _send(rt, f"e{i}") is OutcomeStatus.ESCALATED
    assert len(open_tasks(rt.journal)) == CAP
    head = rt.journal.head()
    with pytest.raises(QuotaExceededError):  # before: one more task, without end
        _send(rt, "e-more")
    # nothing of it journaled: the quota's one record of the hour aside (test_217)
    assert [e.kind for e in rt.journal.events() if e.seq > head[0]] == ["quota.reached"]
    head = rt.journal.head()
    with pytest.raises(QuotaExceededError):
        _send(rt, "e-more-again")
    assert rt.journal.head() == head
    assert len(open_tasks(rt.journal)) == CAP
    first = open_tasks(rt.journal)[0]
    rt.resolve_task(first.id, by=APPROVER, token=DEMO_TOKENS[APPROVER], note="looked at it")
    assert _send(rt, "e-after") is OutcomeStatus.ESCALATED
    assert len(open_tasks(rt.journal)) == CAP
    assert rt.journal.verify().intact


def test_the_runtimes_own_proposal_still_escalates_at_the_limit(capped: Runtime) -> None:
    """A compensation (the runtime's own proposal, :meth:`Runtime._submit`) sent back past
    the budget still ends in its task at the agent's limit: counted, never refused."""
    rt = capped
    for i in range(rt.config.repair_budget):
        assert _send(rt, f"p{i}") is OutcomeStatus.REPAIR
    for i in range(CAP):
        assert _send(rt, f"e{i}") is OutcomeStatus.ESCALATED
    own = rt._submit(proposal("comp", "demo.ledger.credit", {"account": "a", "amount": 3},
                              task_id="flood"))
    assert own.status is OutcomeStatus.ESCALATED
    assert len(open_tasks(rt.journal)) == CAP + 1
    with pytest.raises(QuotaExceededError):  # and it counts
        _send(rt, "e-more")
