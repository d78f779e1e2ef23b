"""An autonomy admin promotes a step's rule only when they may answer the step themselves.

Finding (twenty-first review): ``autonomy promote`` asked for an admin — the policy's
``admin_role`` or the scope ``autonomy`` — with their token, and nothing about the step.
Promoting hands the step's decisions to the learned rule: from then on the rule answers
in place of people. An approver limited to the scope ``account_closure`` (may not answer
``credit-review``'s ``review``, asked within ``payments``: ``test_170``), with the role
``admin``, promoted the rule that answers it; so did one holding only ``autonomy``; so did
the person the workflow's agent acts for (who may never answer its steps: ``test_67``).

Now the admin must also be one who may answer the step, as a decision on it is checked:
its scope as each run of its history defines it (``*`` for a step asked within none, and
for a run whose workflow no longer reads), the workflow's agent and the one it acts for
excluded. Anyone else: ``cannot promote``, exit 1, nothing journaled; an admin holding
``payments`` promotes as before.

The real CLI (in process) on a demo home whose ``credit-review`` asks its review within
``payments``; the history is made through the engine, as people's answers make it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import APPROVER, REQUESTER
from cradle_kg.loop.runtime import Runtime
from cradle_kg.workflow import AutonomyPolicy, runner
from tests.inprocess import run_cli

from .test_170_human_step_scope import DAVE, TOKENS, _home, _start

pytestmark = pytest.mark.usefixtures("journal_backend")

WF, STEP = "credit-review", "review"
ERIN, GWEN, FRANK = "user:erin", "user:gwen", "user:frank"
ADMINS = {ERIN: ("admin", ("account_closure",)),   # an admin of another scope
          GWEN: ("approver", ("autonomy",)),        # the autonomy scope alone
          FRANK: ("admin", ("payments",)),          # an admin who answers the step
          REQUESTER: ("admin", ("*",))}             # the one the workflow's agent acts for


def _answered(rt: Runtime, first: int, n: int) -> None:
    for i in range(first, first + n):
        _start(rt, f"credit-{i}")
        runner.decide(rt, runner.open_engine(rt), f"credit-{i}", STEP, by=DAVE,
                      token=TOKENS[DAVE], answer="hold")


def _in_shadow(home: Path) -> None:
    """``credit-review`` (review within ``payments``) in shadow, ready to promote: two
    decisions learned from, two fresh ones the rule agrees with (a policy of two)."""
    _home(home)
    config = load_config(home / "config.json")
    kept = tuple(a for a in config.approvers if a.id != REQUESTER)
    save_config(home / "config.json", config.model_copy(update={"approvers": (
        *kept, *(Approver(id=who, role=role, scopes=scopes, token_hash=token_hash("t-" + who))
                 for who, (role, scopes) in ADMINS.items()))}))
    with Runtime(home, graph_sync=False) as rt:
        book = runner.open_engine(rt).autonomy
        book.set_policy(WF, STEP, AutonomyPolicy(version="two", min_sample=2, min_fresh=2),
                        by=APPROVER)
        _answered(rt, 0, 2)
        assert book.propose(WF, STEP, by=DAVE) is not None
        book.shadow(WF, STEP, by=DAVE)
        _answered(rt, 2, 2)


def _promoted(home: Path) -> list[str]:
    with Runtime(home, graph_sync=False) as rt:
        return [e.actor for e in rt.journal.events_of_kind("autonomy.promoted")]


def test_only_an_admin_who_may_answer_the_step_promotes_its_rule(ledger_home: Path) -> None:
    _in_shadow(ledger_home)
    for who, said in ((ERIN, "scope `payments`"), (GWEN, "scope `payments`"),
                      (REQUESTER, "acts for")):
        done = run_cli("autonomy", "promote", WF, STEP, "--as", who, "--home",
                       str(ledger_home), env={"CRADLE_APPROVER_TOKEN": "t-" + who})
        # before: exit 0, `credit-review/review: promoted by …`
        assert done.returncode == 1, (who, done.stdout, done.stderr)
        assert "cannot promote" in done.stderr and said in done.stderr, (who, done.stderr)
        assert "Traceback" not in done.stderr
        assert _promoted(ledger_home) == []
    done = run_cli("autonomy", "promote", WF, STEP, "--as", FRANK, "--home", str(ledger_home),
                   env={"CRADLE_APPROVER_TOKEN": "t-" + FRANK})
    assert done.returncode == 0, done.stderr
    assert _promoted(ledger_home) == [FRANK]
