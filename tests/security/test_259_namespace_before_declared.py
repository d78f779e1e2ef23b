"""An agent's run namespace holds before the agent is declared, and after.

Attack: run namespaces (``test_235``) existed only for the agents ``config.json`` declared
now. Another agent claimed ``run:agent:newbot/lg-1`` today — through MCP's
``cradle-kg/run``, the SDK, the JSON API, or a task id ``agent:newbot/lg-1`` that derives
it — and tomorrow the operator declared ``agent:newbot``: every call of ``newbot``'s
LangGraph thread ``1`` (whose run that is) was refused as the claimant's run, and the
claimant read, as the run's owner, what the host recorded there for ``newbot``.

What must hold: ``run:<x>/<rest>`` is identity ``<x>``'s whoever ``<x>`` is, declared or
not; another identity's claim or proposal there is one :class:`RunOwnershipError` naming
the namespace, nothing journaled, at every door. A run claimed by another identity before
this held (an older journal) is refused to both with a reason naming the namespace and the
claimant, and read in full by the approvers alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError, RunOwnershipError
from cradle_kg.integrations.calls import GovernedSession, HostMeta
from cradle_kg.loop.runtime import RUN_CLAIMED
from cradle_kg.records import Plan, PlanStep, Proposal
from cradle_kg.storage import NewEvent
from cradle_kg.workflow.runner import check_run_id

from .homes import credit, json_api
from .mcp_http import MALLORY, declare_agent, token_for, two_agent_fixtures

#: an agent the operator will declare tomorrow, and its LangGraph thread `1`'s run
NEWBOT = "agent:newbot"
THREAD_RUN = f"run:{NEWBOT}/lg-1"
CREDIT = {"account": "acct-1", "amount": 5}


def _proposal(agent: str, pid: str, **where: str) -> dict[str, Any]:
    return {**credit(pid, agent=agent, amount=5), **where}


home, rt = two_agent_fixtures()


def test_an_undeclared_agents_run_is_refused_to_others_at_every_door(
        home: Path, rt: Runtime) -> None:
    head = rt.journal.head()
    # MCP: the host names the run in `_meta` (`cradle-kg/run`)
    squat = GovernedSession(rt, MALLORY).call("demo.ledger.credit", CREDIT,
                                              HostMeta(run=THREAD_RUN))
    assert squat.status == "refused", squat.text  # before: executed, the run claimed
    assert squat.structured["reason_codes"] == ["run_not_yours"]
    assert NEWBOT in squat.text and "namespace" in squat.text
    # the SDK, a claim as the JSON API makes it, and a task id that derives the run
    with pytest.raises(RunOwnershipError, match="namespace"):
        rt.submit(_proposal(MALLORY, "p-1", run_id=THREAD_RUN))
    with pytest.raises(RunOwnershipError, match="namespace"):
        rt.claim_run(THREAD_RUN, MALLORY)
    with pytest.raises(RunOwnershipError, match="namespace"):
        rt.submit({**_proposal(MALLORY, "p-2"), "task_id": f"{NEWBOT}/lg-1"})
    # a person's namespace is theirs too: no agent proposes in it
    with pytest.raises(RunOwnershipError, match="namespace"):
        rt.submit(_proposal(MALLORY, "p-3", run_id="run:user:emma/inbox"))
    # the JSON API
    with json_api(rt) as client:
        answer = client.post("/api/proposals", json=_proposal(MALLORY, "p-4",
                                                               run_id=THREAD_RUN),
                             headers={"Authorization": f"Bearer {token_for(home, MALLORY)}"})
    assert answer.status_code == 403, answer.text
    assert "namespace" in answer.text
    # a workflow run is never named `run:…` (test_41)
    with pytest.raises(InputError):
        check_run_id(THREAD_RUN)
    assert rt.journal.head() == head  # nothing of any attempt


def test_the_declared_agents_thread_then_runs_in_its_run(home: Path) -> None:
    with Runtime(home) as rt:
        GovernedSession(rt, MALLORY).call("demo.ledger.credit", CREDIT,
                                          HostMeta(run=THREAD_RUN))
    declare_agent(home, NEWBOT)
    with Runtime(home) as rt:
        done = GovernedSession(rt, NEWBOT, session_id="lg-1").call("demo.ledger.credit",
                                                                   CREDIT)
        assert done.status == "executed", done.text  # before: refused, mallory's run
        assert rt.journal.run_agent(THREAD_RUN) == NEWBOT


def test_a_run_claimed_before_is_refused_to_both_and_read_by_approvers(home: Path) -> None:
    with Runtime(home) as rt:  # what the code before wrote: mallory's claim of the run
        rt.context.append([NewEvent(
            run_id=THREAD_RUN, kind=RUN_CLAIMED, subject=THREAD_RUN, actor=MALLORY,
            at=rt.clock(), payload={"agent_id": MALLORY}, idem_key="run-claim:" + THREAD_RUN)])
        rt.record_input(THREAD_RUN, "credit acct-1 with 5", author="user:emma")
    declare_agent(home, NEWBOT)
    with Runtime(home) as rt:
        head = rt.journal.head()
        victim = GovernedSession(rt, NEWBOT, session_id="lg-1").call("demo.ledger.credit",
                                                                     CREDIT)
        assert victim.status == "refused", victim.text
        assert "namespace" in victim.text and MALLORY in victim.text  # said so, clearly
        squat = GovernedSession(rt, MALLORY).call("demo.ledger.credit", CREDIT,
                                                  HostMeta(run=THREAD_RUN))
        assert squat.status == "refused", squat.text  # never shared
        assert rt.journal.head() == head
        with json_api(rt) as client:
            def subjects(token: str) -> list[Any]:
                got = client.get(f"/api/runs/{THREAD_RUN}",
                                 headers={"Authorization": f"Bearer {token}"})
                assert got.status_code == 200, got.text
                return [e["subject"] for e in got.json()["events"]]
            # before: the claimant read the run (the user's input for newbot) as its owner
            assert set(subjects(token_for(home, MALLORY))) == {None}
            assert set(subjects(token_for(home, NEWBOT))) == {None}
            assert THREAD_RUN in subjects(DEMO_TOKENS[APPROVER])


def test_no_token_of_another_binds_evidence_to_the_namespace(home: Path, rt: Runtime) -> None:
    """A host's upload is evidence in the run it names: not in another identity's."""
    head = rt.journal.head()
    with json_api(rt) as client:
        def upload(token: str) -> Any:
            return client.post("/api/evidence", params={"kind": "invoice", "run": THREAD_RUN},
                               content=b"invoice 4471", headers={
                                   "Authorization": f"Bearer {token}"})
        refused = upload(token_for(home, MALLORY, host=True))
        assert refused.status_code == 403, refused.text  # before: 200, counted there
        assert NEWBOT in refused.text
        assert rt.journal.head() == head
        assert upload(DEMO_TOKENS[APPROVER]).status_code == 200  # a person gives it


def test_a_plan_whose_run_is_a_namespace_is_refused_before_it_starts(rt: Runtime) -> None:
    """``run:plan:<id>``: a plan id with a `/` names the namespace of `plan:…`: its steps
    would each be refused there, after the plan's start was journaled."""
    step = PlanStep(proposal=Proposal.model_validate(_proposal(MALLORY, "p-plan")))
    head = rt.journal.head()
    with pytest.raises(InputError, match="plan"):
        rt.run_plan(Plan(id="ops/1", steps=(step,)))
    assert rt.journal.head() == head
