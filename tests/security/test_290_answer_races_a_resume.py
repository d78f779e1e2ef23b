"""An answer to a run's waiting step and a resume of the run, at the same moment: one walk.

Finding: a walk reads the run once, then writes each step as it goes; nothing stopped a
second walk of the same run at the same time. An answer walks its run on at once, and a
resume (``cradle-kg workflow resume``, ``POST /api/workflows/runs/{run}/resume``: an
approver's, a supervisor's retry) that read the run after the answer walked it on too —
each wrote the review's completion and the run's end: two ``step.completed`` for one
step, two ``workflow.completed`` for one run (with a tool step after the review, its
proposal twice).

Now each event a walk writes about a step is written ``if_last`` on the step's events it
read (probed before the read): of two walks, the first to write a step takes the run on
and the other is refused, typed — ``run_moved`` for a resume; for an answer, whose
decision stands, ``not_continued`` beside it (as an approval's, ``test_168``). A resume
that reads the run before the answer has nothing to do (``waiting_human``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import CradleError
from cradle_kg.workflow import runner
from tests.racers import at_once
from tests.security.gated_flow import gated_home, waiting_runs

pytestmark = pytest.mark.usefixtures("journal_backend")

ROUNDS = 12


def _resumes(rt: Runtime, run: str) -> Any:
    """Resume the run until it is no longer waiting: the first resume after the answer
    walks the run on beside the answer's own walk."""
    for _ in range(2000):
        out = runner.resume(runner.open_engine(rt), run)
        if out["status"] != "waiting_human":
            return out
    raise AssertionError("the run waited through every resume")


def test_an_answer_racing_a_resume_walks_the_run_once(tmp_path: Path) -> None:
    home = gated_home(tmp_path / "home", waiting=ROUNDS)
    with Runtime(home, graph_sync=False) as rt:
        for run in waiting_runs(rt, ROUNDS, "race"):
            answered, resumed = at_once(
                lambda run=run: runner.decide(rt, runner.open_engine(rt), run, "review",
                                              by=APPROVER, token=DEMO_TOKENS[APPROVER],
                                              answer="go"),
                lambda run=run: _resumes(rt, run))
            kinds = [(e.kind, e.payload.get("step")) for e in rt.journal.events(run_id=run)]
            assert kinds.count(("human.decided", "review")) == 1
            assert kinds.count(("step.completed", "review")) == 1, kinds  # before: 2
            assert [k for k, _ in kinds].count("workflow.completed") == 1, kinds
            assert not isinstance(answered, Exception), answered  # the answer stands
            assert answered["status"] in ("completed", "not_continued"), answered
            if answered["status"] == "not_continued":  # the resume walked the run on
                assert answered["code"] == "run_moved" and resumed["status"] == "completed"
            elif isinstance(resumed, CradleError):  # the answer's walk did
                assert resumed.code == "run_moved", resumed.message
            else:  # the resume read the run once the answer's walk was done
                assert resumed["status"] == "completed", resumed
        assert rt.journal.verify().intact
