"""Who may not approve an agent's actions does not answer its workflow's human steps.

Finding: an approval can never be given by the agent that asked for it nor by the person
it acts for (``acts_for`` in ``config.json``): ``approvals approve`` refuses them ("proposed
this action (or acts for its proposer) and cannot approve it"). A workflow's human step is
the same kind of gate — ``credit-review``'s ``review`` decides whether the agent's credit
is made — but anyone holding an approver's token could answer it. In the demo home the
ledger agent acts for ``user:alice``, who is also an approver: alice answered ``pay`` to
the review of her own agent's credit of 900 (``step decide … --as user:alice``, and
``POST /api/steps/{run}/review/decide`` with her token), and the credit was made — the
four-eyes review her approval of the same credit would have been refused for.

Now answering a human step is refused to the workflow's agent and to the one it acts for,
as an approval is: exit 1 and one ``error:`` line on the command line, 403 over HTTP,
nothing journaled, the step still waits for someone else (``user:bob`` answers it as
before).

The demo home with ``examples/workflows/credit-review.yaml``; the real command line and a
real ``cradle-kg serve``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, REQUESTER
from tests import oneshot

from ..inprocess import run_cli
from ..server.conftest import start_server, stop_server
from .test_61_workflow_json_answers import _home

INPUT = {"account": "acct-3", "amount": 900, "reason": "refund"}


def _kinds(home: Path, run: str) -> list[str]:
    with Runtime(home, graph_sync=False) as rt:
        return [e.kind for e in rt.journal.events(run_id=run)]


def _acts_for_alice(home: Path) -> None:
    with Runtime(home, graph_sync=False) as rt:
        agent = rt.config.agent(AGENT)
        assert agent is not None and agent.acts_for == REQUESTER
        assert rt.config.approver(REQUESTER) is not None  # alice is an approver too


@pytest.mark.slow
def test_the_agents_principal_cannot_answer_on_the_command_line(tmp_path: Path) -> None:
    home = _home(tmp_path / "home")
    _acts_for_alice(home)
    started = run_cli("workflow", "run", "credit-review", "--input", json.dumps(INPUT),
                  "--home", str(home), "--format", "json")
    assert started.returncode == 0, started.stderr
    run = json.loads(started.stdout)["run_id"]
    before = _kinds(home, run)

    done = run_cli("step", "decide", run, "review", "--as", REQUESTER, "--answer", "pay",
               "--home", str(home), env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[REQUESTER]})
    # before: exit 0, the run `completed` and the credit of 900 made on alice's own review
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.startswith(f"error: `{REQUESTER}`"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert _kinds(home, run) == before  # nothing journaled: the step still waits

    bob = run_cli("step", "decide", run, "review", "--as", APPROVER, "--answer", "pay",
              "--home", str(home), "--format", "json",
              env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert bob.returncode == 0, bob.stderr
    assert json.loads(bob.stdout)["status"] == "completed"
    assert "action.intent" in _kinds(home, run)


@pytest.mark.slow
def test_the_agents_principal_cannot_answer_over_http(tmp_path: Path) -> None:
    home = _home(tmp_path / "home")
    srv = start_server(["--home", str(home)], tmp_path / "serve.log", home)

    def as_(who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {DEMO_TOKENS[who]}"}

    try:
        # alice may start her agent's workflow (an approver may) — not review it
        began = oneshot.post(f"{srv.url}/api/workflows/credit-review/runs",
                           headers=as_(REQUESTER), json={"input": INPUT}, timeout=60)
        assert began.status_code == 200 and began.json()["status"] == "waiting_human"
        run = str(began.json()["run_id"])
        before = _kinds(home, run)

        def answer(who: str) -> Any:
            return oneshot.post(f"{srv.url}/api/steps/{run}/review/decide", headers=as_(who),
                              json={"answer": "pay"}, timeout=60)

        own = answer(REQUESTER)
        assert own.status_code == 403, own.text  # before: 200 `completed`, credit made
        assert REQUESTER in own.json()["detail"]["message"]
        assert _kinds(home, run) == before
        paid = answer(APPROVER)
        assert paid.status_code == 200 and paid.json()["status"] == "completed", paid.text
    finally:
        stop_server(srv)
    assert "Traceback" not in srv.log.read_text(errors="replace")
