"""Human tasks: an escalation can be seen and closed by an authenticated person, and the run
stops reading `escalated` once every task of it is resolved."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.runs import show_run

from .conftest import make_config, proposal, register_test_tools
from .inprocess import run_cli

# the journal on each backend (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def cli(*args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (tests/inprocess): same main, exit code and output."""
    return run_cli(*args, env={"CRADLE_APPROVER_TOKEN": token} if token else None)


def test_an_escalation_is_listed_and_resolved(home: Path) -> None:
    with Runtime(home, config=make_config()) as rt:
        register_test_tools(rt)
        out = rt.submit(proposal("p", "test.wide", {}, agent="agent:tester", target="test:1"))
    assert out.status is OutcomeStatus.VERIFICATION_FAILED  # no compensation: a human task
    listed = cli("tasks", "list", "--home", str(home), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    tasks = json.loads(listed.stdout)
    assert len(tasks) == 1 and tasks[0]["run_id"] == out.run_id
    task_id = tasks[0]["id"]
    with Runtime(home, config=make_config()) as rt:
        assert show_run(rt.journal, out.run_id)[0].status == "escalated"

    wrong = cli("tasks", "resolve", task_id, "--as", APPROVER, "--note", "fixed",
                "--home", str(home), token="nope")
    assert wrong.returncode == 1 and "does not authenticate" in wrong.stderr
    no_note = cli("tasks", "resolve", task_id, "--as", APPROVER, "--note", " ",
                  "--home", str(home), token=DEMO_TOKENS[APPROVER])
    assert no_note.returncode == 2 and "needs a note" in no_note.stderr
    done = cli("tasks", "resolve", task_id, "--as", APPROVER, "--note",
               "removed the stray write by hand", "--home", str(home),
               token=DEMO_TOKENS[APPROVER])
    assert done.returncode == 0, done.stderr
    again = cli("tasks", "resolve", task_id, "--as", APPROVER, "--note", "x",
                "--home", str(home), token=DEMO_TOKENS[APPROVER])
    assert again.returncode == 2 and "already resolved" in again.stderr

    assert json.loads(cli("tasks", "list", "--home", str(home), "--format",
                          "json").stdout) == []
    resolved = json.loads(cli("tasks", "list", "--all", "--home", str(home), "--format",
                              "json").stdout)
    assert resolved[0]["resolved_by"] == APPROVER
    assert resolved[0]["resolution"] == "removed the stray write by hand"
    with Runtime(home, config=make_config()) as rt:
        assert show_run(rt.journal, out.run_id)[0].status == "verification_failed"
        assert rt.journal.verify().intact


def test_tasks_are_listed_a_page_at_a_time(home: Path) -> None:
    """``tasks list`` reads one page of the derived ``human_tasks`` (``--limit``,
    ``--offset``), oldest first, and says on stderr how to read the next one."""
    with Runtime(home, config=make_config()) as rt:
        register_test_tools(rt)
        runs = [rt.submit(proposal(f"p{i}", "test.wide", {}, agent="agent:tester",
                                   target=f"test:{i}", task_id=f"t{i}")).run_id
                for i in range(3)]
    page = cli("tasks", "list", "--home", str(home), "--format", "json", "--limit", "2")
    assert page.returncode == 0, page.stderr
    assert [t["run_id"] for t in json.loads(page.stdout)] == runs[:2]
    rest = cli("tasks", "list", "--home", str(home), "--limit", "2", "--offset", "2")
    assert rest.returncode == 0 and runs[2] in rest.stdout and runs[0] not in rest.stdout
    first = cli("tasks", "list", "--home", str(home), "--limit", "2")
    assert "1 to 2 of 3 tasks; more with --offset 2" in first.stderr
