"""The CLI run in this process, for tests where the process boundary is not the point.

``run_cli(*args)`` does what ``python -m cradle_kg ARGS`` does — ``cradle_kg.cli.main``
with ``sys.argv`` set, its exit code, its stdout and stderr apart, stdin and environment
variables given — without starting an interpreter (0.5-2 s each on a loaded machine).
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

    runner = CliRunner()
    argv = sys.argv
    code = 0
    with runner.isolation(input=stdin, env={"COLUMNS": "200", **(env or {})}) as (out, err, _):
        sys.argv = ["cradle-kg", *args]
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
