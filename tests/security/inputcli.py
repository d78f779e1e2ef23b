"""What the input attacks share: a real home, the real CLI in a real process under a
memory ceiling, and the journal's event count before and after (read in this process)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from cradle_kg.demo.scenario import AGENT, prepare_home

#: address space a CLI process may use; a run-away parse dies instead of eating the host
MEMORY_CEILING = 3 * 1024**3


def _ceiling() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CEILING, MEMORY_CEILING))


def cli(*args: str, stdin: str | bytes | None = None, env: dict[str, str] | None = None,
        columns: str | None = "200") -> subprocess.CompletedProcess[str]:
    """``cradle-kg ARGS`` in a fresh process, stdout/stderr piped (not a terminal)."""
    base = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        base["COLUMNS"] = columns
    data = stdin.encode("utf-8", "surrogatepass") if isinstance(stdin, str) else stdin
    done = subprocess.run([sys.executable, "-m", "cradle_kg", *args], input=data,
                          capture_output=True, timeout=300, env={**base, **(env or {})},
                          check=False, preexec_fn=_ceiling)
    return subprocess.CompletedProcess(done.args, done.returncode,
                                       done.stdout.decode("utf-8", "replace"),
                                       done.stderr.decode("utf-8", "replace"))


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

    if not (home / "journal.sqlite").exists():
        return 0
    done = run_cli("audit", "verify", "--home", str(home), "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["intact"], report
    return int(report["events"])


def assert_refused(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Exit 2, one line ``error: ...`` (plus an optional hint), no traceback."""
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = [ln for ln in done.stderr.splitlines() if ln and not ln.startswith("  hint:")]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]


def received(home: Path) -> int:
    """How many proposals the journal has received (read-only, without the CLI)."""
    import sqlite3

    path = home / "journal.sqlite"
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT count(*) FROM events WHERE kind = 'proposal.received'"
                           ).fetchone()
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()
    return int(row[0])
