"""A run stuck before its human step (its process died mid-walk) counts until it moves on.

Finding (beside ``test_249``): a run of the agent's workflow whose process died while a
step before the human one ran — the start journaled, the walk cut — waited for nobody and
counted in nothing. At ``waiting_per_agent: 1`` the agent's token started another run
(its review then waited), and an approver walking the stuck one on
(``POST /api/workflows/runs/{id}/resume``, ``cradle-kg workflow resume``) put a second
review in the inbox: the limit passed by every run a crash left behind.

Now such a run counts from its start (``starting_runs``) until its first
``human.requested`` or its end: the agent's next start is refused (429
``quota_exceeded``, no ``workflow.started``) until a person walks the stuck run on — it
then counts as its open step — and answers it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.server.auth import issue_agent_token
from tests.racers import racer, racing_context
from tests.security.gated_flow import TESTER, gated_home, register_gate, start
from tests.security.homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")

BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


def _walked(home: Path) -> Runtime:
    rt = Runtime(home, graph_sync=False)
    register_gate(rt, threading.Barrier(1))  # the tool step returns at once
    return rt


def _dies_mid_walk(home: str, token: str) -> None:
    """A ``serve`` that starts the agent's run, then dies (SIGKILL) as its tool step's
    call is about to be journaled."""
    with _walked(Path(home)) as rt, json_api(rt) as client:
        start(client, token, "first")
    raise AssertionError("the process was to die before the run's step was called")


def cut_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A home at ``waiting_per_agent: 1`` whose agent's first run was cut (SIGKILL) before
    its tool step's call was journaled, and the agent's token."""
    home = gated_home(tmp_path / "home", waiting=1)
    with Runtime(home, graph_sync=False) as rt:
        token = issue_agent_token(rt.home, rt.config, TESTER)
    ctx = racing_context()
    monkeypatch.setenv("CRADLE_CRASH_AT", "before_intent")
    dying = racer(ctx, _dies_mid_walk, str(home), token)
    monkeypatch.delenv("CRADLE_CRASH_AT")
    dying.start()
    dying.join(120)
    assert dying.exitcode == -9, dying.exitcode
    return home, token


def _starts(rt: Runtime) -> list[str]:
    return [e.run_id for e in rt.journal.events() if e.kind == "workflow.started"]


def test_a_run_cut_before_its_human_step_counts(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    home, token = cut_run(tmp_path, monkeypatch)
    with _walked(home) as rt, json_api(rt) as client:
        (stuck,) = _starts(rt)
        assert rt.journal.open_step_requests(agent=TESTER, limit=0)[1] == 0  # cut before it

        out = start(client, token, "second")
        assert out.status_code == 429, out.text  # before: 200, its review waiting
        assert out.json()["detail"]["error"] == "quota_exceeded"
        assert _starts(rt) == [stuck]  # nothing of the refused start written

        # an approver walks the stuck run on: it counts as its open step now
        walked: Any = client.post(f"/api/workflows/runs/{stuck}/resume", headers=BOB)
        assert walked.status_code == 200, walked.text
        assert walked.json()["status"] == "waiting_human", walked.json()
        assert rt.journal.waiting(TESTER) == 1
        assert start(client, token, "third").status_code == 429

        answered = client.post(f"/api/steps/{stuck}/review/decide", headers=BOB,
                               json={"answer": "go"})
        assert answered.status_code == 200, answered.text
        assert rt.journal.waiting(TESTER) == 0
        out = start(client, token, "fourth")
        assert out.status_code == 200 and out.json()["status"] == "waiting_human", out.text
        assert rt.journal.verify().intact
