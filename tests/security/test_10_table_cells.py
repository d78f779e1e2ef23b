"""Item 10: what approvers read cannot lie to them.

Every table cell (and every line the CLI prints about a record) escapes Rich markup and
strips control characters — terminal escapes, C1 controls and bidi overrides — even piped.
The commands run in this process (their output captured, not a terminal, as when piped):
what they print is the point here, not a process or its memory ceiling.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from tests.inprocess import run_cli as cli

from .inputcli import fresh_home

HIDDEN_ID = "[conceal]HIDDEN[/conceal][link=http://evil]x"
#: no NUL: an id holding U+0000 is refused before anything is journaled (the last test)
NASTY_TASK = "t\x1b[2J\x1b]0;pwned\x07\x9b31m\u202eevil\u2066isonul\r\b"
SHOWN_TASK = NASTY_TASK + "-2"
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\x00", "\r", "\b")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = fresh_home(tmp_path_factory.mktemp("cells") / "home")
    with Runtime(path) as rt:
        waiting = rt.submit({"id": HIDDEN_ID, "task_id": NASTY_TASK, "agent_id": AGENT,
                             "action": {"action_type": "demo.ledger.close_account",
                                        "target": "ledger:z", "arguments": {"account": "z"}}})
        executed = rt.submit({"id": HIDDEN_ID + "-2", "task_id": SHOWN_TASK, "agent_id": AGENT,
                              "action": {"action_type": "demo.ledger.credit",
                                         "target": "ledger:z",
                                         "arguments": {"account": "z", "amount": 1}}})
    assert waiting.approval is not None and executed.ok
    return path


def _clean(text: str) -> None:
    for ch in FORBIDDEN:
        assert ch not in text, (repr(ch), repr(text[:3000]))


@pytest.mark.parametrize("args", [("approvals", "list"), ("approvals", "list", "--pending"),
                                  ("runs", "list"), ("tasks", "list", "--all"),
                                  ("tools", "list")])
def test_listings_escape_markup_and_strip_controls(home: Path, args: tuple[str, ...]) -> None:
    done = cli(*args, "--home", str(home), env={"COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    _clean(done.stdout)
    if args[0] == "approvals":
        assert "[conceal]HIDDEN[/conceal][link=http://evil]x" in done.stdout
    if args[0] in ("approvals", "runs"):
        assert "t[2J]0;pwned31mevilisonul" in done.stdout


def test_run_show_is_clean_too(home: Path) -> None:
    run_id = "run:" + SHOWN_TASK
    done = cli("runs", "show", run_id, "--home", str(home), env={"COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    _clean(done.stdout)
    assert "[conceal]HIDDEN" in done.stdout


def test_errors_naming_hostile_values_are_clean(home: Path) -> None:
    done = cli("runs", "show", "[conceal]X\x1b[31m\u202eY", "--home", str(home))
    assert done.returncode == 2
    _clean(done.stderr)
    assert "[conceal]X" in done.stderr


def test_the_json_output_keeps_the_values_exactly(home: Path) -> None:
    done = cli("approvals", "list", "--home", str(home), "--format", "json")
    listed = json.loads(done.stdout)
    assert listed[0]["proposal_id"] == HIDDEN_ID
    assert json.loads(cli("runs", "show", "run:" + SHOWN_TASK, "--home", str(home),
                          "--format", "json").stdout)["run_id"] == "run:" + SHOWN_TASK
    assert listed[0]["run_id"] == "run:" + NASTY_TASK
    for ch in FORBIDDEN:  # escaped as \\uXXXX, never raw on the terminal
        assert ch not in done.stdout


@pytest.mark.usefixtures("journal_backend")
@pytest.mark.parametrize("field", ["id", "task_id", "run_id", "target"])
def test_an_id_holding_nul_is_refused_before_anything_is_journaled(
        tmp_path: Path, field: str) -> None:
    """U+0000 in an id: a typed refusal on both journals (PostgreSQL's ``text`` cannot
    hold it; SQLite could, and a command line could then never name the record)."""
    from cradle_kg.errors import ProposalError

    path = fresh_home(tmp_path / "home")
    body = {"id": "p-nul", "task_id": "t-nul", "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:z",
                       "arguments": {"account": "z", "amount": 1}}}
    if field == "target":
        body["action"]["target"] = "ledger:z\x00y"  # type: ignore[index]
    else:
        body[field] = "x\x00y"
    with Runtime(path) as rt:
        with pytest.raises(ProposalError, match="NUL"):
            rt.submit(body)
        assert rt.journal.head()[0] == 0
