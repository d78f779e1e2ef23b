"""A cancel and an answer to the run's waiting step, at the same moment: one wins.

Finding (with ``test_286``): nothing ended a workflow run; once a cancel exists it races
the answers to the run's steps — an answer read the step as waiting, the cancel landed,
and the answer's walk went on from a run that had ended (its review's decision, the next
steps, the run's end written after the cancel).

Now each round, in threads of one process (the JSON API's), exactly one wins: the cancel
— the answer is refused, ``run_cancelled``, and nothing of the workflow is written after
the cancel (the answer's decision is refused under the writer's lock when it comes
second, ``if_run_open``; its walk is, when the cancel lands in it) — or the answer — the
run completed and the cancel is refused, ``run_ended``, nothing written. The run has one
end either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, REQUESTER
from cradle_kg.errors import CradleError
from cradle_kg.workflow import runner
from tests.racers import at_once
from tests.security.gated_flow import gated_home, waiting_runs

pytestmark = pytest.mark.usefixtures("journal_backend")

ROUNDS = 12
#: how long the cancel waits after the answer set off, by round: at once, in the answer's
#: decision, in its walk, after it (which wins is the journal's to say, not the delay's)
STAGGER = (0.0, 0.002, 0.005, 0.01, 0.02, 0.05)


def _later(delay: float, call: Callable[[], Any]) -> Any:
    time.sleep(delay)
    return call()
WALK_KINDS = ("step.started", "step.completed", "step.failed", "human.requested",
              "human.decided", "workflow.completed", "workflow.failed")


def test_a_cancel_racing_an_answer_one_wins(tmp_path: Path) -> None:
    from cradle_kg.workflow.cancel import cancel  # before: no such module

    home = gated_home(tmp_path / "home", waiting=ROUNDS)
    wins = {"answer": 0, "cancel": 0}
    with Runtime(home, graph_sync=False) as rt:
        for r, run in enumerate(waiting_runs(rt, ROUNDS, "race")):
            answered, cancelled = at_once(
                lambda run=run: runner.decide(rt, runner.open_engine(rt), run, "review",
                                              by=APPROVER, token=DEMO_TOKENS[APPROVER],
                                              answer="go"),
                lambda run=run, r=r: _later(STAGGER[r % len(STAGGER)], lambda: cancel(
                    rt, runner.open_engine(rt), run, by=REQUESTER,
                    token=DEMO_TOKENS[REQUESTER], reason="race")))
            events = list(rt.journal.events(run_id=run))
            ends = [e for e in events if e.kind in ("workflow.completed", "workflow.failed")]
            assert len(ends) == 1, [e.kind for e in ends]  # one end, whoever won
            if isinstance(cancelled, dict):  # the cancel won
                assert isinstance(answered, CradleError), answered
                assert answered.code == "run_cancelled", answered.message
                assert ends[0].seq == cancelled["seq"] and ends[0].actor == REQUESTER
                assert not [e.kind for e in events if e.seq > cancelled["seq"]
                            and e.kind in WALK_KINDS]
                wins["cancel"] += 1
            else:  # the answer won: the run completed, the cancel refused
                assert isinstance(cancelled, CradleError), cancelled
                assert cancelled.code == "run_ended", cancelled.message
                assert answered["status"] == "completed", answered
                assert ends[0].kind == "workflow.completed"
                wins["answer"] += 1
            assert sum(e.kind == "human.decided" for e in events) <= 1
        assert rt.journal.open_step_requests()[1] == 0
        assert rt.journal.verify().intact
    assert sum(wins.values()) == ROUNDS, wins
