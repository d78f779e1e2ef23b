"""``budgets set`` and ``autonomy propose|shadow|halt`` journal a person only with their
token.

Finding (twenty-first review): these commands journaled whatever ``--as`` said as the
person who acted — ``budget.set``, ``autonomy.proposed``, ``autonomy.shadow``,
``autonomy.halted`` under ``user:bob`` (an approver of the home) or under ``ops`` (no one
of the home) — without any token, while ``approvals approve`` and ``autonomy promote``
ask for the named approver's. The journal is what an auditor reads: a name in it must be
proved.

Now ``--as`` names an approver of the home and their token goes with it (``--token`` or
``$CRADLE_APPROVER_TOKEN``), checked as an approval's: missing, wrong, or a name that is
no approver, one ``error:`` line, exit 1, nothing journaled. A budget is set by an
approver holding the scope ``budgets`` (or ``*``); the kill switch by any approver.

The real CLI in a process of its own, on a demo home (``user:bob``, ``user:alice``: every
scope).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.storage.opening import open_home_journal

from .homes import opened_demo_home
from .inputcli import assert_refused, cli

KINDS = ("budget.set", "autonomy.proposed", "autonomy.shadow", "autonomy.halted")
BUDGET = ("budgets", "set", "--level", "tenant", "--subject", "acme", "--limit", "5")
COMMANDS = {
    "budgets set": BUDGET,
    "autonomy propose": ("autonomy", "propose", "credit-review", "review"),
    "autonomy shadow": ("autonomy", "shadow", "credit-review", "review"),
    "autonomy halt": ("autonomy", "halt", "credit-review", "review", "--reason", "drill"),
}


def _journaled(home: Path) -> list[tuple[str, str]]:
    """(kind, actor) of every event these commands write."""
    with open_home_journal(home, must_exist=True) as journal:
        return [(e.kind, e.actor) for kind in KINDS for e in journal.events_of_kind(kind)]


def _refused(done: subprocess.CompletedProcess[str], said: str) -> None:
    """Exit 1 (refused: not a malformed input), one ``error:`` line, no traceback."""
    assert_refused(done, said, code=1)
    assert "unexpected" not in done.stderr, done.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(("who", "token", "said"), [
    (APPROVER, None, "needs the approver's token"),
    (APPROVER, "demo-token-alice", "does not authenticate"),
    ("ops", None, "not an approver of this home"),
    ("ops", DEMO_TOKENS[APPROVER], "not an approver of this home"),
])
def test_a_name_without_its_proof_is_refused_and_nothing_journaled(
        tmp_path_factory: pytest.TempPathFactory, command: str, who: str,
        token: str | None, said: str) -> None:
    home = opened_demo_home(tmp_path_factory, "t337")
    done = cli(*COMMANDS[command], "--as", who, "--home", str(home),
               env={"CRADLE_APPROVER_TOKEN": token or ""})
    # before: exit 0 (propose, shadow: exit 1 for no rule yet), the name journaled as said
    _refused(done, said)
    assert _journaled(home) == []


def test_the_named_approver_with_their_token_acts(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    home = opened_demo_home(tmp_path_factory, "t337ok")
    env = {"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]}
    assert cli(*BUDGET, "--as", APPROVER, "--home", str(home), env=env).returncode == 0
    halted = cli(*COMMANDS["autonomy halt"], "--as", APPROVER, "--home", str(home), env=env)
    assert halted.returncode == 0, halted.stderr
    # `--token` works as the variable does
    again = cli(*COMMANDS["autonomy halt"], "--as", "user:alice", "--token",
                DEMO_TOKENS["user:alice"], "--home", str(home), env={"CRADLE_APPROVER_TOKEN": ""})
    assert again.returncode == 0, again.stderr
    assert _journaled(home) == [("budget.set", APPROVER), ("autonomy.halted", APPROVER),
                                ("autonomy.halted", "user:alice")]


def test_a_budget_is_set_by_an_approver_holding_the_budgets_scope(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    home = opened_demo_home(tmp_path_factory, "t337scope")
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers,
        Approver(id="user:refunds", scopes=("refunds",), token_hash=token_hash("t-refunds")),
        Approver(id="user:fin", scopes=("budgets",), token_hash=token_hash("t-fin")))}))
    narrow = cli(*BUDGET, "--as", "user:refunds", "--home", str(home),
                 env={"CRADLE_APPROVER_TOKEN": "t-refunds"})
    _refused(narrow, "may not set budgets")  # before: journaled
    assert _journaled(home) == []
    # the kill switch is any approver's, scoped or not
    halted = cli(*COMMANDS["autonomy halt"], "--as", "user:refunds", "--home", str(home),
                 env={"CRADLE_APPROVER_TOKEN": "t-refunds"})
    assert halted.returncode == 0, halted.stderr
    done = cli(*BUDGET, "--as", "user:fin", "--home", str(home),
               env={"CRADLE_APPROVER_TOKEN": "t-fin"})
    assert done.returncode == 0, done.stderr
    assert _journaled(home) == [("budget.set", "user:fin"),
                                ("autonomy.halted", "user:refunds")]
