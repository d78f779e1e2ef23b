"""A workflow run is its workflow's agent's from its first event.

Finding: a run belongs to the agent of its first proposal or claim (``test_19``,
``test_20``). A workflow run has neither until its first tool step proposes — the
credit-review example asks a person first — so any other agent could claim it (its id is
listed by ``/api/runs`` to every token) and speak in it through the JSON API, MCP or
LangGraph. Worse, the engine takes any *executed* outcome in its run under the id the
tool step would use (``<run>/<step>/<input hash>``) as that step's result: Mallory
proposed her own credit, of 1 to ``acct-m``, under that id in Alice's review run; the
approver then answered ``pay`` for "credit 15 to acct-3", the workflow completed
``pay`` with Mallory's output — and Alice's credit never ran. A workflow run's owner is
now the agent its ``workflow.started`` names while nobody proposed in it
(:func:`cradle_kg.loop.runtime.run_owner`, under every entry point's ``claim_run``):
Mallory's claim is refused before anything is journaled, and the reviewed credit runs.
And the engine takes as a tool step's recorded result only an outcome of the workflow
agent's own proposal: one another agent planted under the step's id (the host's own code
may run several agents in one run) makes the step's proposal a reused id — the workflow
fails, visibly, instead of completing on someone else's effect.

The entry point is driven as the JSON API drives it (``parse_proposal``, ``claim_run``,
``submit``: ``POST /api/proposals``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.canonical import content_hash
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, ledger_for
from cradle_kg.errors import RunOwnershipError
from cradle_kg.workflow import Engine
from cradle_kg.workflow.definitions import load_file
from cradle_kg.workflow.runner import decide
from tests.workflow.conftest import recorded

from .mcp_http import MALLORY, ROOT, two_agent_home

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = ROOT / "examples" / "workflows" / "credit-review.yaml"


def _as_api(rt: Runtime, raw: dict[str, Any]) -> Any:
    """What ``POST /api/proposals`` does for the caller's token."""
    parsed = rt.parse_proposal(raw)
    rt.claim_run(parsed.effective_run_id, raw["agent_id"])
    return rt.submit(parsed)


def test_another_agent_cannot_speak_in_a_workflow_run(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    with Runtime(home) as rt:
        engine = Engine(rt, client=recorded())
        wf = load_file(FLOW)
        run = engine.start(wf, {"account": "acct-3", "amount": 15,
                                "reason": "refund"}).run_id
        step_id = f"{run}/pay/" + content_hash({"account": "acct-3", "amount": 15})[7:19]
        before = sum(1 for _ in rt.journal.events(run_id=run))
        forged = {"id": step_id, "task_id": run, "run_id": run, "agent_id": MALLORY,
                  "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-m",
                             "arguments": {"account": "acct-m", "amount": 1}}}
        with pytest.raises(RunOwnershipError, match=wf.agent):
            _as_api(rt, forged)
        assert sum(1 for _ in rt.journal.events(run_id=run)) == before  # nothing journaled
        done = decide(rt, engine, run, "review", by=APPROVER, token=DEMO_TOKENS[APPROVER],
                      answer="pay")
        assert done["status"] == "completed", done
        ledger = ledger_for(rt)
        assert ledger.balance("acct-3") == 15  # the reviewed credit ran
        assert ledger.balance("acct-m") == 0
        # the workflow's own agent still speaks in its run
        own = {"id": "p-own", "task_id": run, "run_id": run, "agent_id": wf.agent,
               "action": {"action_type": "demo.ledger.balance", "target": "ledger:acct-3",
                          "arguments": {"account": "acct-3"}}}
        assert _as_api(rt, own).status.value == "executed"


def test_the_engine_takes_only_its_own_agents_outcome_for_a_tool_step(tmp_path: Path) -> None:
    """Defence in depth, for the host's own code (``Runtime.submit`` in process may run
    several agents in one run): an executed outcome another agent put under the tool
    step's id is not the step's result — the step submits its own proposal, which is
    refused as a reused id, and the workflow fails instead of completing on it."""
    home = two_agent_home(tmp_path / "home")
    with Runtime(home) as rt:
        engine = Engine(rt, client=recorded())
        run = engine.start(load_file(FLOW), {"account": "acct-3", "amount": 15,
                                             "reason": "refund"}).run_id
        step_id = f"{run}/pay/" + content_hash({"account": "acct-3", "amount": 15})[7:19]
        planted = rt.submit({"id": step_id, "task_id": run, "run_id": run,
                             "agent_id": MALLORY,
                             "action": {"action_type": "demo.ledger.credit",
                                        "target": "ledger:acct-m",
                                        "arguments": {"account": "acct-m", "amount": 1}}})
        assert planted.status.value == "executed"  # the host let it run: its call
        done = decide(rt, engine, run, "review", by=APPROVER, token=DEMO_TOKENS[APPROVER],
                      answer="pay")
        assert done["status"] == "failed", done
        assert "pay" not in done["outputs"], done
        assert ledger_for(rt).balance("acct-3") == 0
