"""A cancel written while another process walks the run stops that walk.

Finding (with ``test_286``): a run's walk reads the run once, then writes each step's
events as it goes. A cancel written meanwhile by another process — the walk held in a
slow tool step — was not seen by the walk, which went on writing the step's completion,
the review's request (back into the inbox, counted again) and, further on, more steps
and the run's end, after the run had been ended.

Now every event a walk writes about a run (``step.*``, ``human.*``, ``model.*``, its
end) is written ``if_run_open``: the journal checks under its writer's lock that the run
has not ended, and refuses the append otherwise; the walk answers the typed
``run_cancelled``. What the tool step's action itself did is journaled (it ran: its
intent was written before the cancel) — nothing of the workflow after it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import CradleError
from cradle_kg.workflow import runner
from tests.racers import race, racer, racing_context
from tests.security.gated_flow import TESTER, gated_home, register_gate
from tests.security.homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")

BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
RUN = "wf:held-1"
#: what a walk writes about its run (the tool's own events are the runtime's)
WALK_KINDS = ("step.started", "step.completed", "step.failed", "step.skipped",
              "human.requested", "human.decided", "workflow.completed", "workflow.failed")


class Held:
    """The tool step's gate: it tells the parent it is running, then waits to be let go."""

    def __init__(self, barrier: Any) -> None:
        self.barrier = barrier

    def wait(self, timeout: float) -> None:
        self.barrier.wait(timeout)  # the tool runs: the parent may cancel now
        self.barrier.wait(timeout)  # the parent cancelled: the tool returns


def _walks(home: str, barrier: Any, out: Any, in_gate1: bool = False) -> None:
    """Walk ``RUN``, held in its tool step — in the tool's call, or (``in_gate1``) before
    its intent, while gate 1 weighs the proposal (a validator, as a pack registers one)."""
    with Runtime(Path(home), graph_sync=False) as rt:
        if in_gate1:
            register_gate(rt, threading.Barrier(1))
            rt.register_validator("test.gate", lambda proposal, spec: Held(barrier).wait(60)
                                  or [], name="held")
        else:
            register_gate(rt, Held(barrier))
        engine = runner.open_engine(rt)
        try:
            done = runner.start(engine, runner.find_definition(rt.home.root, "gated-review"),
                                {"label": "held"}, run_id=RUN)
            out.put(("walked", done["status"]))
        except CradleError as exc:
            out.put(("refused", exc.code))


def _cancel_held_walk(home: Path, rt: Runtime, *, in_gate1: bool) -> int:
    """Cancel ``RUN`` over the JSON API while another process's walk is held in its tool
    step; the walk is refused ``run_cancelled``; the cancel's seq."""
    ctx = racing_context()
    barrier, out = ctx.Barrier(2), ctx.Queue()
    cancelled: list[Any] = []
    with json_api(rt) as client:

        def cancel_while_held() -> None:
            barrier.wait(120)  # the walk is in its tool step
            cancelled.append(client.post(f"/api/workflows/runs/{RUN}/cancel", headers=BOB,
                                         json={"reason": "stop it"}))
            barrier.wait(120)  # let it go on

        (answer,) = race([racer(ctx, _walks, str(home), barrier, out, in_gate1)], out,
                         meanwhile=cancel_while_held)
    assert cancelled[0].status_code == 200, cancelled[0].text  # before: 404
    assert answer == ("refused", "run_cancelled"), answer  # before: waiting_human
    return int(cancelled[0].json()["seq"])


def test_a_walk_in_another_process_stops_at_the_cancel(tmp_path: Path) -> None:
    home = gated_home(tmp_path / "home", waiting=1)
    with Runtime(home, graph_sync=False) as rt:
        at = _cancel_held_walk(home, rt, in_gate1=False)
        events = list(rt.journal.events(run_id=RUN))
        after = [e.kind for e in events if e.seq > at and e.kind in WALK_KINDS]
        assert after == [], after  # nothing of the workflow after the cancel
        assert [e.kind for e in events if e.kind.startswith("workflow.")] == [
            "workflow.started", "workflow.failed"]
        assert "run.outcome" in [e.kind for e in events if e.seq > at]  # the tool's own
        assert rt.journal.waiting(TESTER) == 0
        assert rt.journal.open_step_requests(run_id=RUN)[1] == 0
        assert rt.journal.verify().intact


def test_a_cancel_before_the_tool_steps_intent_stops_its_action(tmp_path: Path) -> None:
    """The cancel lands while gate 1 weighs the step's proposal: the proposal's events, up
    to its intent, are refused under the writer's lock — the tool is never called."""
    home = gated_home(tmp_path / "home", waiting=1)
    with Runtime(home, graph_sync=False) as rt:
        at = _cancel_held_walk(home, rt, in_gate1=True)
        events = list(rt.journal.events(run_id=RUN))
        assert not [e.kind for e in events if e.seq > at], [e.kind for e in events]
        kinds = [e.kind for e in events]
        assert "action.intent" not in kinds and "proposal.received" not in kinds, kinds
        assert rt.journal.waiting(TESTER) == 0
        assert rt.journal.verify().intact
