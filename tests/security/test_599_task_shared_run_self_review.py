"""The agent whose proposal a human task is about, and the person it acts for, never close it.

Finding (twenty-seventh review): closing a human task is refused to the run's agent, the
person it acts for and whoever started the run (``test_179``), and an approver's inbox
leaves those tasks out (``test_215``) — but "the run's agent" was the run's *first*
proposal's agent. The host's own code may run several agents in one run
(``Runtime.submit`` in process, as in one task): when a helper agent proposed first, the
ledger agent's escalation in that run (its proposals sent back past the repair budget)
was closed by ``user:alice``, the person the ledger agent acts for ("checked, all fine"),
and her inbox offered it to her — the second look given by the one person it should not be.

Now the agent of the task's own proposal (the ``proposal.received`` its opening names)
and the person it acts for are refused too, and left out of their inbox: ``ApprovalError``,
nothing journaled, the task still open; another approver closes it as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Proposal, Runtime, Verdict
from cradle_kg.config import Agent, Permission, load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, REQUESTER
from cradle_kg.errors import ApprovalError
from cradle_kg.inbox import inbox, inbox_size
from cradle_kg.loop.escalation import open_tasks
from cradle_kg.loop.gate1.findings import Finding
from tests.conftest import proposal

pytestmark = pytest.mark.usefixtures("journal_backend")

HELPER = "agent:helper"


def _with_helper(home: Path) -> None:
    """A second agent of the home, acting for nobody, allowed the ledger too."""
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "agents": (*config.agents, Agent(id=HELPER, role="helper",
                                         permitted_scopes=("ledger:read", "ledger:write"))),
        "permissions": (*config.permissions,
                        Permission(subject=HELPER, action_type="demo.ledger.*",
                                   resource_selector="ledger:*"))}))


def _repair_ledger_agent(p: Proposal, spec: object) -> list[Finding]:
    if p.agent_id != AGENT:
        return []
    return [Finding(code="odd", message="repair it", verdict=Verdict.REPAIR)]


def _shared_run_escalated(rt: Runtime) -> str:
    """A run the helper proposed in first, then the ledger agent's repairs used up."""
    rt.register_validator("demo.ledger.credit", _repair_ledger_agent, name="ledger-only")
    first = rt.submit(proposal("h-1", "demo.ledger.credit", {"account": "a", "amount": 1},
                               task_id="shared", agent=HELPER))
    assert first.status is OutcomeStatus.EXECUTED
    for i in range(rt.config.repair_budget + 1):
        out = rt.submit(proposal(f"l-{i}", "demo.ledger.credit", {"account": "a", "amount": 3},
                                 task_id="shared", agent=AGENT))
    assert out.status is OutcomeStatus.ESCALATED
    [task] = [t.id for t in open_tasks(rt.journal, run_id="run:shared")]
    return task


def test_the_principal_of_the_tasks_agent_cannot_close_it(ledger_home: Path) -> None:
    _with_helper(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        task = _shared_run_escalated(rt)
        assert rt.journal.run_agent("run:shared") == HELPER  # the run's first agent
        before = rt.journal.head()
        with pytest.raises(ApprovalError, match=REQUESTER):  # before: closed
            rt.resolve_task(task, by=REQUESTER, token=DEMO_TOKENS[REQUESTER],
                            note="checked, all fine")
        assert rt.journal.head() == before  # nothing journaled
        assert [t.id for t in open_tasks(rt.journal, run_id="run:shared")] == [task]
        done = rt.resolve_task(task, by=APPROVER, token=DEMO_TOKENS[APPROVER],
                               note="reconciled with the bank statement")
        assert done.resolved_by == APPROVER


def test_her_inbox_leaves_it_out(ledger_home: Path) -> None:
    _with_helper(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        task = _shared_run_escalated(rt)
        for limit in (None, 10):  # the whole inbox, and a page of it (in the query)
            mine = [i.id for i in inbox(rt, kinds=("task",), limit=limit, decider=REQUESTER)]
            assert task not in mine  # before: offered to her
            merged = [i.id for i in inbox(rt, limit=limit, decider=REQUESTER)]
            assert task not in merged
        assert inbox_size(rt, kinds=("task",), decider=REQUESTER) == 0
        assert [i.id for i in inbox(rt, kinds=("task",), decider=APPROVER)] == [task]
