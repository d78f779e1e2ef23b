"""The CLI run in this process, for tests where the process boundary is not the point.

``run_cli(*args)`` does what ``python -m cradle_kg ARGS`` does — ``cradle_kg.cli.main``
with ``sys.argv`` set, its exit code, its stdout and stderr apart, stdin and environment
variables given — without starting an interpreter (0.5-2 s each on a loaded machine).
Each run gets consoles made afresh, as a new process would: rich fixes a console's width
from ``COLUMNS`` when it is made, so a command run with other columns sees them.
It returns a ``subprocess.CompletedProcess`` so a test switches by changing its helper.
Tests about what only a real process shows (a signal, a crash point that kills, two
processes racing, the console script itself) keep their subprocesses.
"""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner


def run_cli(*args: str, stdin: str | None = None, env: dict[str, str | None] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """``env``: variables to set for the command (``None`` unsets one)."""
    from cradle_kg.cli import main
    from cradle_kg.cli.common import console, err_console

    runner = CliRunner()
    argv = sys.argv
    code = 0
    with runner.isolation(input=stdin, env={"COLUMNS": "200", **(env or {})}) as (out, err, _):
        sys.argv = ["cradle-kg", *args]
        console._real = err_console._real = None  # made on first use, under this run's env
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = argv
            sys.stdout.flush()
            sys.stderr.flush()
        stdout = out.getvalue().decode("utf-8", errors="replace")
        stderr = err.getvalue().decode("utf-8", errors="replace")
    return subprocess.CompletedProcess(["cradle-kg", *args], code, stdout, stderr)
