"""A reading command ran the recovery pass, and called a dead worker's tool again.

Finding (nineteenth round): the commands that only read through a runtime — ``workflow
status``, ``approvals list``/``show``, ``inbox``, ``evidence show``, ``budgets status``,
``autonomy status`` — opened the home's whole runtime, which takes a worker's lease and
reconciles every dangling intent before it answers. On a home whose worker was killed
between an intent and its outcome, the first of them an auditor ran (``workflow
status``) called the tool again — the demo ledger credited 70 — and journaled the retry,
the observation, the verification, the commit and the outcome (seq 4 to 9): a reader
acted on the world and wrote into the evidence it was reading. A worker killed after its
call (``after_call``) had its intent reconciled and written the same way.

Now they open the home read only (:class:`~cradle_kg.Runtime` with ``read_only=True``):
no lease, no recovery, nothing journaled; the intent still dangles, for the home's own
``cradle-kg recover``. On both journals.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from cradle_kg.storage import open_home_journal
from tests.inprocess import run_cli
from tests.racers import run_python
from tests.security.handed import RUNTIME_READERS, home_files

pytestmark = pytest.mark.usefixtures("journal_backend")

REPO = Path(__file__).resolve().parents[2]
#: a worker that dies right after the intent of a credit is journaled, before the call
CHILD = """
import sys
from cradle_kg import Runtime
from tests.security.homes import credit
Runtime(sys.argv[1]).submit(credit("p-dangling", amount=70))
"""


def _journal(home: Path) -> tuple[tuple[int, str], list[tuple[int, str]]]:
    with open_home_journal(home, must_exist=True) as journal:
        return journal.head(), journal.dangling_intents()


def test_a_reader_leaves_a_dead_workers_intent_dangling(home: Path) -> None:
    env = {**os.environ, "CRADLE_CRASH_AT": "after_intent"}
    done = run_python(CHILD, [str(home)], env=env, cwd=REPO, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    journal, files = _journal(home), home_files(home)
    assert journal[1], "the intent dangles"
    assert not (home / "demo-ledger").exists()  # the credit was never called
    for command in RUNTIME_READERS:
        res = run_cli(*command, "--home", str(home), env={"CRADLE_CRASH_AT": None})
        assert "Traceback" not in res.stdout + res.stderr
        # before: the first reader recovered the intent — the credit called, four events
        assert _journal(home) == journal, command
        assert home_files(home) == files, command
    assert run_cli("inbox", "--home", str(home)).returncode == 0
