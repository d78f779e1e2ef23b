"""An agent's stuck workflow run held its ``waiting_per_agent`` quota, and no operator could
release it.

Finding: a run waiting on a human step no one will answer (the customer withdrew, the
question is moot) counts against its agent's ``waiting_per_agent`` until a person answers
it; there was no command that ends a workflow run (``cradle-kg workflow`` had ``list``,
``validate``, ``run``, ``status`` and ``resume``). At ``waiting_per_agent: 1`` the agent's
every next start was refused for good, and the step stayed in every approver's inbox —
unless someone gave an answer they did not mean.

Now ``cradle-kg workflow cancel RUN --as APPROVER --reason TEXT`` (the approver's token)
ends it: one ``workflow.failed`` written by them (``code: cancelled``), after which the run
counts in no quota, leaves the inbox, and is never answered or resumed (a typed error
naming the cancel). A run that ended is not cancelled again; nothing is written then.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, REQUESTER
from cradle_kg.server.auth import issue_agent_token
from tests.inprocess import run_cli
from tests.security.gated_flow import TESTER, gated_home, register_gate, start
from tests.security.homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")

BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
REASON = "the customer withdrew the request"


def _cli(home: Path, *args: str, token: str | None = DEMO_TOKENS[APPROVER]
         ) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "--home", str(home), env={"CRADLE_APPROVER_TOKEN": token})


def test_an_operator_cancels_a_stuck_run_and_its_quota_is_released(tmp_path: Path) -> None:
    home = gated_home(tmp_path / "home", waiting=1)
    with Runtime(home, graph_sync=False) as rt, json_api(rt) as client:
        register_gate(rt, threading.Barrier(1))  # the tool step returns at once
        token = issue_agent_token(rt.home, rt.config, TESTER)
        first = start(client, token, "first")
        assert first.status_code == 200 and first.json()["status"] == "waiting_human", first.text
        run = first.json()["run_id"]
        assert rt.journal.waiting(TESTER) == 1
        assert start(client, token, "second").status_code == 429  # the quota is held

        out = _cli(home, "workflow", "cancel", run, "--as", APPROVER, "--reason", REASON,
                   "--format", "json")
        assert out.returncode == 0, out.stdout + out.stderr  # before: no such command
        done = json.loads(out.stdout)
        assert (done["status"], done["by"], done["closed_steps"]) == (
            "cancelled", APPROVER, ["review"])

        # the quota is released, the step left the inbox, the run says it was cancelled
        assert rt.journal.waiting(TESTER) == 0
        assert client.get(f"/api/inbox?run={run}", headers=BOB).json() == []
        shown = json.loads(_cli(home, "runs", "show", run, "--format", "json").stdout)
        assert shown["status"] == "cancelled", shown
        assert shown["cancelled"]["by"] == APPROVER and shown["cancelled"]["reason"] == REASON
        assert shown["why"] == [f"workflow cancelled by `{APPROVER}`: {REASON}"]
        status = json.loads(_cli(home, "workflow", "status", run, "--format", "json").stdout)
        assert [(s["id"], s["state"]) for s in status["steps"]] == [
            ("prepare", "completed"), ("review", "cancelled")], status["steps"]
        listed = _cli(home, "runs", "list", "--format", "json").stdout
        assert any(r["run_id"] == run and r["status"] == "cancelled"
                   for r in json.loads(listed))
        third = start(client, token, "third")
        assert third.status_code == 200 and third.json()["status"] == "waiting_human"

        # never answered, never resumed, never cancelled twice: typed, nothing written
        before = rt.journal.head()
        answer = _cli(home, "step", "decide", run, "review", "--as", APPROVER,
                      "--answer", "go")
        assert answer.returncode == 2 and "cancelled by" in answer.stderr, answer.stderr
        resume = _cli(home, "workflow", "resume", run)
        assert resume.returncode == 2 and "cancelled by" in resume.stderr, resume.stderr
        again = _cli(home, "workflow", "cancel", run, "--as", APPROVER, "--reason", "again")
        assert again.returncode == 2 and "cancelled by" in again.stderr, again.stderr
        api = client.post(f"/api/steps/{run}/review/decide", headers=BOB,
                          json={"answer": "go"})
        assert api.status_code == 409 and api.json()["detail"]["error"] == "run_cancelled"
        assert rt.journal.head() == before

        # who may cancel: an approver, with their own token
        other = third.json()["run_id"]
        for token_given, who in ((None, APPROVER), ("wrong", APPROVER),
                                 (DEMO_TOKENS[APPROVER], REQUESTER),
                                 (DEMO_TOKENS[APPROVER], TESTER)):
            refused = _cli(home, "workflow", "cancel", other, "--as", who, "--reason", "x",
                           token=token_given)
            assert refused.returncode == 1, (who, refused.stdout, refused.stderr)
        unknown = _cli(home, "workflow", "cancel", "wf:nope", "--as", APPROVER,
                       "--reason", "x")
        assert unknown.returncode == 2 and "unknown workflow run" in unknown.stderr
        for reason in ("", "  ", "x" * 10_001):  # a cancel says why, within bounds
            bad = _cli(home, "workflow", "cancel", other, "--as", APPROVER, "--reason", reason)
            assert bad.returncode == 2, (bad.stdout, bad.stderr)
        assert rt.journal.head() == before
        assert rt.journal.waiting(TESTER) == 1  # the third run still waits
        assert rt.journal.verify().intact
    assert _cli(home, "audit", "verify", "--semantics").returncode == 0
