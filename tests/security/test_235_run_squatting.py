"""Another agent cannot squat the runs our integrations derive for an agent.

Attack: a run is the agent's of its first proposal or claim (``test_20``), and the runs the
integrations derived were guessable: LangGraph's ``run:lg-<thread_id>`` (thread ids are
often ``1``, ``thread-1``, a user id). Another agent, with its own valid token, claimed such
a run first — through the JSON API's ``run_id``, MCP's ``cradle-kg/run`` or the SDK — and
every later call of the victim's thread was refused as another agent's run (a denial of
service).

What must hold: a derived run lives in its agent's namespace, ``run:<agent id>/…``
(``run:agent:ledger-assistant/lg-1``); a claim or a proposal in a run of a configured
agent's namespace by any other identity is refused — one :class:`RunOwnershipError`,
nothing journaled — at every entry point, before or after the owner's first step. A run a
host names outside every agent's namespace works as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import RunOwnershipError
from cradle_kg.integrations.calls import GovernedSession, HostMeta
from cradle_kg.loop.proposal import run_namespace_owner
from tests import oneshot

from ..server.conftest import start_server, stop_server
from .mcp_http import AGENT, MALLORY, token_for, two_agent_fixtures

#: the run LangGraph derives for AGENT's graph thread "1"
THREAD_RUN = f"run:{AGENT}/lg-1"


def _proposal(agent: str, pid: str, run: str) -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": agent,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-1",
                       "arguments": {"account": "acct-1", "amount": 5}}}


home, rt = two_agent_fixtures()


def test_the_derived_runs_carry_the_agents_id(rt: Runtime) -> None:
    assert GovernedSession(rt, AGENT, session_id="lg-1").run_id == THREAD_RUN
    assert GovernedSession(rt, AGENT).run_id.startswith(f"run:{AGENT}/mcp-")
    assert run_namespace_owner(THREAD_RUN) == AGENT
    assert run_namespace_owner("run:lg-1") is None


def test_a_squat_is_refused_at_every_door_and_journals_nothing(rt: Runtime) -> None:
    head = rt.journal.head()
    # MCP (a governed session naming the run in `cradle-kg/run`)
    mallory = GovernedSession(rt, MALLORY)
    squat = mallory.call("demo.ledger.credit", {"account": "acct-1", "amount": 7},
                         HostMeta(run=THREAD_RUN))
    assert squat.status == "refused", squat.text
    assert squat.structured["reason_codes"] == ["run_not_yours"]
    # the SDK, and a claim as the JSON API makes it
    with pytest.raises(RunOwnershipError):
        rt.submit(_proposal(MALLORY, "p-squat", THREAD_RUN))
    with pytest.raises(RunOwnershipError):
        rt.claim_run(THREAD_RUN, MALLORY)
    assert rt.journal.head() == head  # nothing of the attempts
    # the victim's thread goes on, and after its first step the door stays shut
    victim = GovernedSession(rt, AGENT, session_id="lg-1")
    assert victim.call("demo.ledger.credit", {"account": "acct-1", "amount": 5}).status \
        == "executed"
    head = rt.journal.head()
    with pytest.raises(RunOwnershipError):
        rt.submit(_proposal(MALLORY, "p-squat-2", THREAD_RUN))
    assert rt.journal.head() == head


def test_runs_outside_the_namespaces_work_as_before(rt: Runtime) -> None:
    """A host-named run is claimed by its first agent; an agent names runs in its own."""
    mallory, alice = GovernedSession(rt, MALLORY), GovernedSession(rt, AGENT)
    assert mallory.call("demo.ledger.credit", {"account": "acct-1", "amount": 7},
                        HostMeta(run="run:support-1")).status == "executed"
    assert alice.call("demo.ledger.credit", {"account": "acct-1", "amount": 7},
                      HostMeta(run="run:support-1")).status == "refused"
    assert alice.call("demo.ledger.credit", {"account": "acct-1", "amount": 7},
                      HostMeta(run=f"run:{AGENT}/team")).status == "executed"
    # an id that only begins like the agent's namespace is the namespace of another id
    assert run_namespace_owner(f"run:{AGENT}x/1") == f"{AGENT}x"


@pytest.mark.slow
def test_the_json_api_answers_403_for_a_squat(home: Path, tmp_path: Path) -> None:
    with Runtime(home) as runtime:
        head = runtime.journal.head()
    token = token_for(home, MALLORY)
    srv = start_server(["--home", str(home)], tmp_path / "server.log", home)
    try:
        answer = oneshot.post(srv.url + "/api/proposals",
                              json=_proposal(MALLORY, "p2", THREAD_RUN),
                              headers={"Authorization": f"Bearer {token}"}, timeout=60)
    finally:
        stop_server(srv)
    assert answer.status_code == 403, answer.text
    assert "namespace" in answer.text
    with Runtime(home) as again:
        assert again.journal.head() == head
