"""A workflow's start and another agent's claim of the same new run, at the same moment.

Finding (left open by ``test_41``): ``Engine.start`` checked that the run had no event,
then wrote its ``workflow.started``; an agent entry point (``Runtime.claim_run``: the JSON
API, MCP, LangGraph) checked that the run had no owner, then wrote its ``run.claimed``.
Each check was a read before its own write, so the two could cross: Mallory's claim landing
between the engine's check and its write put the workflow in Mallory's run (its owner is
the actor of the run's first claim), and a ``workflow.started`` landing between Mallory's
check and her claim left her claim in the workflow's run, and her the run's owner — her
proposals then spoke in Alice's workflow run (``test_39``). Measured before the fix, in
five runs each: 5 to 28 of the 80 rounds crossed on SQLite, 68 to 71 on PostgreSQL — both
ways.

Both writes now carry ``NewEvent.if_new_run``, checked by the journal under its writer's
lock: of the two, whichever is written first is the run's first event, and the other is
refused, nothing written — the engine answers "run already exists", the entry point "run
belongs to". Nothing of the guard is stored: the events' bytes and hashes are unchanged.

Two processes, each its own runtime on one journal (the default SQLite, or PostgreSQL with
``--journal-backend postgresql``), released together at a barrier for each of 80 new runs.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import InputError, RunOwnershipError
from cradle_kg.loop.runtime import run_owner
from cradle_kg.storage import NewEvent
from cradle_kg.workflow import Engine
from cradle_kg.workflow.definitions import load_file
from tests.racers import race, racer, racing_context
from tests.workflow.conftest import recorded

from .mcp_http import AGENT, MALLORY, ROOT, two_agent_home

FLOW = ROOT / "examples" / "workflows" / "credit-review.yaml"  # its agent: AGENT
INPUT = {"account": "acct-3", "amount": 15, "reason": "refund"}
ROUNDS = 80
#: what an agent's entry point writes to make a run its own
CLAIMS = ("run.claimed", "proposal.received")


def _run(i: int) -> str:
    return f"wf-race-{i}"


def _jitter() -> None:
    """Up to 1 ms after the barrier, each side: neither is always first (without it, one
    side won nearly every round on PostgreSQL)."""
    time.sleep(random.random() / 1000)


def _host(home: str, barrier: Any, out: Any) -> None:
    """Alice's host: starts the credit review under a chosen run id, each round."""
    said = []
    with Runtime(home, graph_sync=False) as rt:
        engine, wf = Engine(rt, client=recorded()), load_file(FLOW)
        for i in range(ROUNDS):
            barrier.wait(60)
            _jitter()
            try:
                engine.start(wf, INPUT, run_id=_run(i))
                said.append("started")
            except InputError as exc:
                assert "already exists" in exc.message, exc.message
                said.append("refused")
    out.put(("host", said))


def _mallory(home: str, barrier: Any, out: Any) -> None:
    """Mallory's entry point: claims the same run id, each round — every other round as
    ``POST /api/proposals`` does (claim, then propose)."""
    said = []
    with Runtime(home, graph_sync=False) as rt:
        for i in range(ROUNDS):
            barrier.wait(60)
            _jitter()
            try:
                rt.claim_run(_run(i), MALLORY)
            except RunOwnershipError:
                said.append("refused")
                continue
            said.append("claimed")
            if i % 2:
                rt.submit({"id": f"p-{i}", "task_id": _run(i), "run_id": _run(i),
                           "agent_id": MALLORY,
                           "action": {"action_type": "demo.ledger.balance",
                                      "target": "ledger:acct-3",
                                      "arguments": {"account": "acct-3"}}})
    out.put(("mallory", said))


def test_a_workflow_never_starts_in_a_run_another_agent_claimed(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    Runtime(home).close()  # the journal exists before the race
    ctx = racing_context()
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [racer(ctx, who, str(home), barrier, out) for who in (_host, _mallory)]
    said = dict(race(procs, out, timeout=120))
    crossed = []
    with Runtime(home, graph_sync=False) as rt:
        for i in range(ROUNDS):
            events = list(rt.journal.events(run_id=_run(i)))
            started = [e for e in events if e.kind == "workflow.started"]
            strangers = [e for e in events if e.kind in CLAIMS and e.actor != AGENT]
            owner = run_owner(rt.journal, _run(i))
            if started:  # the workflow's run: its start first, nobody else's claim in it
                ok = (events[0].kind == "workflow.started" and not strangers
                      and owner == AGENT
                      and (said["host"][i], said["mallory"][i]) == ("started", "refused"))
            else:  # Mallory's run, and the workflow refused to start in it
                ok = (owner == MALLORY
                      and (said["host"][i], said["mallory"][i]) == ("refused", "claimed"))
            if not ok:
                crossed.append((i, said["host"][i], said["mallory"][i],
                                [(e.kind, e.actor) for e in events[:3]], owner))
        assert rt.journal.verify().intact
    assert not crossed, f"{len(crossed)} of {ROUNDS} rounds crossed: {crossed[:3]}"
    # a real race: each side won rounds (measured after the fix: the fewer, 20 to 40 of 80)
    assert 0 < said["host"].count("started") < ROUNDS, said


def test_a_claim_of_a_run_with_only_ownerless_events_is_still_written(tmp_path: Path) -> None:
    """A run holding events but no owner (the host's own, no proposal, no workflow) is
    claimed as before: the guarded claim is refused (the run has begun), the run read
    again is nobody's, and the claim is written without the guard — no workflow can start
    in a run that has an event. A workflow's run stays its agent's."""
    home = two_agent_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        rt.context.append([NewEvent(run_id="run:hosted", kind="host.note", subject="note:1",
                                    actor="host", at=rt.clock(), payload={})])
        rt.claim_run("run:hosted", MALLORY)
        assert run_owner(rt.journal, "run:hosted") == MALLORY
        with pytest.raises(InputError, match="already exists"):
            Engine(rt, client=recorded()).start(load_file(FLOW), INPUT, run_id="run:hosted")
        Engine(rt, client=recorded()).start(load_file(FLOW), INPUT, run_id="wf-own")
        with pytest.raises(RunOwnershipError):
            rt.claim_run("wf-own", MALLORY)
        rt.claim_run("wf-own", AGENT)  # its own agent: nothing to write
        kinds = [e.kind for e in rt.journal.events(run_id="wf-own")]
        assert kinds[0] == "workflow.started" and "run.claimed" not in kinds
