"""What the input attacks share: a real home, the real CLI in a real process under a
memory ceiling, and the journal's event count before and after (read in this process)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path
from typing import Any

from cradle_kg.demo.scenario import AGENT, prepare_home
from tests.racers import CLI, run_python

#: address space a CLI process may use; a run-away parse dies instead of eating the host
MEMORY_CEILING = 3 * 1024**3


def _ceiling() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CEILING, MEMORY_CEILING))


def cli(*args: str, stdin: str | bytes | None = None, env: dict[str, str] | None = None,
        columns: str | None = "200", timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``cradle-kg ARGS`` (``python -m cradle_kg``) in a process of its own under the
    memory ceiling, stdout/stderr to files (not a terminal); a process still running after
    ``timeout`` seconds is killed and raises ``TimeoutExpired``. The process is forked from
    the fork server (:func:`tests.racers.run_python`): the attack meets the same
    ``main`` in a process whose death or ceiling is its own, without an interpreter start
    (~0.3-0.5 s of CPU) before each."""
    base = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        base["COLUMNS"] = columns
    data = stdin.encode("utf-8", "surrogatepass") if isinstance(stdin, str) else stdin
    done = run_python(CLI, args, env={**base, **(env or {})}, cwd=os.getcwd(),
                      timeout=timeout, stdin=data, preexec=_ceiling)
    return subprocess.CompletedProcess(["cradle-kg", *args], done.returncode, done.stdout,
                                       done.stderr)


def fresh_home(path: Path) -> Path:
    prepare_home(path)
    return path


def credit(pid: str, **extra: Any) -> dict[str, Any]:
    """A small, valid credit proposal the demo home executes."""
    action = {"action_type": "demo.ledger.credit", "target": "ledger:acct-f",
              "arguments": {"account": "acct-f", "amount": 3}}
    action.update(extra.pop("action", {}))
    return {"id": pid, "task_id": "task-" + pid, "agent_id": AGENT, "action": action, **extra}


def events(home: Path) -> int:
    """How many events the journal holds (0 when there is none yet), by ``audit verify``
    run in this process: the count is what a test observes, the attack goes through
    :func:`cli`."""
    from tests.inprocess import run_cli

    if not _has_journal(home):
        return 0
    done = run_cli("audit", "verify", "--home", str(home), "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["intact"], report
    return int(report["events"])


def _has_journal(home: Path) -> bool:
    """The home has a journal: its SQLite file, or any journal ``CRADLE_JOURNAL_URL``
    names (a PostgreSQL schema exists before the first event)."""
    from cradle_kg.storage.opening import JOURNAL_URL_ENV

    return (home / "journal.sqlite").exists() or bool(os.environ.get(JOURNAL_URL_ENV))


def assert_refused(done: subprocess.CompletedProcess[str], *needles: str, code: int = 2
                   ) -> None:
    """Exit ``code`` (2: the input), one line ``error: ...`` (plus an optional hint), no
    traceback."""
    assert done.returncode == code, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = [ln for ln in done.stderr.splitlines() if ln and not ln.startswith("  hint:")]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]


def received(home: Path) -> int:
    """How many proposals the journal has received (read-only, without the CLI; on the
    home's journal, whichever backend ``CRADLE_JOURNAL_URL`` selects)."""
    from cradle_kg.errors import CradleError
    from cradle_kg.storage.opening import open_home_journal

    try:
        journal = open_home_journal(home, must_exist=True)
    except CradleError:  # no journal yet
        return 0
    with journal:
        return len(journal.events_of_kind("proposal.received"))
