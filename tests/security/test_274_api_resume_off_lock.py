"""An approver's resume that walks into a slow step holds no other identity of ``serve``.

Finding (after ``test_273``): ``POST /api/workflows/runs/{id}/resume`` walks a run on —
the run a process left when it died mid-walk — under the JSON API's one lock. A run of
mallory's workflow cut before its slow step (its process killed as the tool's call was
about to be journaled) held every identity's reads and writes for all of the tool's 30 s
once an approver walked it on: the other agent's ``GET /api/runs`` waited until the tool
had answered.

Now a resume runs outside the API's lock, on the approver's own threads (the walk is the
one an approval's decision and a step's answer make: ``test_272``, ``test_273``).

``test_271``'s home, slow tool and workflow; the cut made as ``test_251`` makes it
(``CRADLE_CRASH_AT=before_intent`` in a process of its own).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.workflow import runner
from tests.racers import racer, racing_context
from tests.server.conftest import Server

from .mcp_http import MALLORY
from .test_271_api_calls_per_identity import served_while_held, serving


def _dies_mid_walk(home: str) -> None:
    """Start mallory's run, die (SIGKILL) as its tool step's call is about to be journaled."""
    with Runtime(Path(home), graph_sync=False) as rt:
        runner.start(runner.open_engine(rt), Path(home) / "workflows" / "slow.yaml",
                     {"n": 1}, by=MALLORY)
    raise AssertionError("the process was to die before the run's step was called")


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    def cut(home: Path) -> None:
        monkeypatch.setenv("CRADLE_CRASH_AT", "before_intent")
        dying = racer(racing_context(), _dies_mid_walk, str(home))
        monkeypatch.delenv("CRADLE_CRASH_AT")
        dying.start()
        dying.join(120)
        assert dying.exitcode == -9, dying.exitcode

    with serving(tmp_path, before=cut) as srv:
        yield srv


def test_a_resume_that_walks_into_a_slow_step_leaves_the_others_served(
        served: Server) -> None:
    assert served.home is not None
    with Runtime(served.home, graph_sync=False) as rt:
        (stuck,) = [e.run_id for e in rt.journal.events() if e.kind == "workflow.started"]
    resumed = served_while_held(served, f"/api/workflows/runs/{stuck}/resume")
    assert resumed.json()["status"] == "completed", resumed.text
