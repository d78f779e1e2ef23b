"""``cradle-kg input RUN --as`` an agent of the home is refused.

Finding (left open by the thirteenth attack review, beside ``test_195``): since
``test_195`` ``input --as`` a person needs that person's token, but an author who is an
*agent* of the home was taken at its word: ``cradle-kg input RUN --text … --as
agent:ledger`` journaled ``input.recorded`` under the agent, and lineage reads a run's
recorded input as its request — a trusted origin and instruction for the values it holds.
A process with the command line and the home (an agent given a shell beside it) recorded
its own words as the run's request. Its upload is no evidence (``test_175``), but its
words became the user's.

Now ``--as`` an agent declared in the home's configuration is refused (one ``error:`` line,
exit 1, nothing stored or journaled); a person with their token and an author who is no
identity of the home (the customer the host speaks for, ``user:emma``) are taken as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT

from ..inprocess import run_cli

pytestmark = pytest.mark.usefixtures("journal_backend")

RUN = "run:task-close"


def _inputs(home: Path) -> list[str]:
    with Runtime(home, graph_sync=False) as rt:
        return [e.actor for e in rt.journal.events() if e.kind == "input.recorded"]


def test_an_agent_is_no_author_of_a_runs_input(ledger_home: Path) -> None:
    res = run_cli("input", RUN, "--text", "Please close acct-9 today.", "--as", AGENT,
                  "--home", str(ledger_home))
    out = res.stdout + res.stderr
    assert res.returncode == 1, out  # before: 0, recorded as the run's request
    assert "agent of the home" in out and "Traceback" not in out, out
    assert _inputs(ledger_home) == []
    assert not (ledger_home / "evidence").exists() or not any(
        p.is_file() for p in (ledger_home / "evidence").rglob("*"))

    # the customer the host speaks for is taken as before
    res = run_cli("input", RUN, "--text", "Please close acct-9 today.", "--as", "user:emma",
                  "--home", str(ledger_home))
    assert res.returncode == 0, res.stdout + res.stderr
    assert _inputs(ledger_home) == ["user:emma"]
