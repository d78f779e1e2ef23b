"""Ids with terminal escapes (ESC/OSC/BEL, C1 CSI, bidi override) reach no terminal through
``cradle-kg approvals`` and ``audit verify``: the unknown id, approver or anchor is echoed
in the one-line error with the control characters removed (the attack holds: kept so it
stays held); so are the proposal, task and run ids an agent put them in, in every table
and line of the approver's commands. ``approvals show --as EVIL`` exits 1, also cleaned.
A hostile remote graph store's answer is covered by ``test_23``."""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS

from ..inprocess import run_cli
from .homes import opened_demo_home

EVIL = "x\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eevil"
CONTROLS = ("\x1b", "\x07", "\u009b", "\u202e")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return opened_demo_home(tmp_path_factory, "tty")


@pytest.mark.parametrize("args", [
    ["approvals", "show", EVIL],
    ["approvals", "approve", EVIL, "--as", APPROVER],
    ["approvals", "reject", EVIL, "--as", APPROVER, "--reason", EVIL],
    ["audit", "verify", "--anchor", EVIL],
    ["audit", "verify", "--anchor", "1:sha256:" + EVIL],
])
def test_hostile_ids_are_printed_without_their_controls(home: Path, args: list[str]) -> None:
    done = run_cli(*args, "--home", str(home),
                   env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert done.returncode == 2, done
    assert done.stderr.startswith("error: "), done.stderr
    assert "pwned" in done.stderr  # the id is echoed, as text
    assert not any(c in done.stdout + done.stderr for c in CONTROLS), done.stderr


def test_an_approval_asked_by_a_hostile_proposal_is_shown_without_controls(
        home: Path) -> None:
    """The agent's proposal, run and task ids carry the escapes into the approval: every
    table and line of the approver's commands shows them as text."""
    with Runtime(home) as rt:
        outcome = rt.submit({
            "id": "p" + EVIL, "task_id": "t" + EVIL, "run_id": "run:" + EVIL,
            "agent_id": "agent:ledger-assistant",
            "action": {"action_type": "demo.ledger.close_account", "target": "ledger:acct-9",
                       "arguments": {"account": "acct-9"}}})
        assert outcome.approval is not None
        approval = outcome.approval.id
    token = {"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]}
    for args in (["approvals", "list"], ["approvals", "show", approval],
                 ["approvals", "show", approval, "--as", APPROVER], ["inbox"], ["runs", "list"],
                 ["runs", "show", "run:" + EVIL],
                 ["approvals", "approve", approval, "--as", APPROVER]):
        done = run_cli(*args, "--home", str(home), env=token)
        assert done.returncode in (0, 1), (args, done)
        assert not any(c in done.stdout + done.stderr for c in CONTROLS), (args, done.stdout)
