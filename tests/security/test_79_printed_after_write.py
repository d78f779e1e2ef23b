"""A command that has written says so in words, whatever the names it quotes hold.

Finding (the fourth attack review, left for a decision): four commands print their line of
success *after* the write, through Rich with markup on, quoting names someone else chose —

* ``cradle-kg input RUN`` quotes the run id (agents choose run ids) and the author:
  ``input 'run:x[/]' …`` journaled the input, then ended in ``error: unexpected
  MarkupError``, exit 2 — so a host that retries a failed command recorded it twice — and
  ``--as '[conceal]user:emma'`` was shown as ``user:emma``, its tags swallowed;
* ``autonomy shadow|promote|halt WORKFLOW STEP`` quotes the workflow and step (not
  validated): ``autonomy halt 'wf[/]' step`` journaled ``autonomy.halted`` (the kill
  switch), then said it had failed;
* ``db migrate`` and ``journal copy`` quote the (redacted) URL, ``worker`` a recovery
  pass's error.

Now each of those values goes through ``clean`` like every recorded value the CLI prints:
the line is printed, exit 0, and the name is quoted as it is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from tests.conftest import make_config
from tests.inprocess import run_cli


def _inputs(home: Path) -> list[str]:
    with Runtime(home, config=make_config()) as rt:
        return [e.run_id for e in rt.journal.events_of_kind("input.recorded")]


@pytest.mark.parametrize(("run_id", "author"), [
    ("run:x[/]", "user:emma"), ("run:ok", "[conceal]user:emma"),
    ("run:[link=https://example.invalid]r[/link]", "user:[bold]emma")])
def test_input_says_it_recorded_whatever_the_names_hold(home: Path, run_id: str,
                                                        author: str) -> None:
    with Runtime(home, config=make_config()):
        pass
    res = run_cli("input", run_id, "--text", "pay the invoice", "--as", author,
                  "--home", str(home))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"in `{run_id}` from `{author}`" in res.stdout, res.stdout
    assert _inputs(home) == [run_id]


def test_autonomy_halt_says_it_halted_whatever_the_names_hold(home: Path) -> None:
    with Runtime(home, config=make_config()):
        pass
    res = run_cli("autonomy", "halt", "wf[/]", "[conceal]step", "--as", APPROVER,
                  "--reason", "drill", "--home", str(home),
                  env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "wf[/]/[conceal]step: halted" in res.stdout, res.stdout
