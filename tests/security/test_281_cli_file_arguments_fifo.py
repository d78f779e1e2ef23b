"""A FIFO named as the file of ``evidence add``, ``input --file`` or ``submit`` is refused,
never waited on.

Finding (left open by the malformed-files round, ``test_275`` …): the three commands read
the path they are given with a plain ``open``, which blocks on a FIFO until some process
opens it for writing: each of them hung for ever (a device would be read as a file too).
They read it now with the runtime's one strict reader (:func:`cradle_kg.inputs.read_file`:
opened without blocking, a regular file only, bounded before it is read), ``-`` still
being stdin: one ``error:`` line naming the file, exit 2, nothing journaled.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS

from .inputcli import assert_refused, cli, credit, fresh_home, received

#: well past a command's run: it ends only a command that waits on the FIFO
DEADLINE = 30


def _commands(home: Path, file: str) -> dict[str, tuple[str, ...]]:
    where = ("--home", str(home))
    return {"evidence": ("evidence", "add", file, "--as", AGENT, *where),
            "input": ("input", "run:emma-1", "--file", file, "--as", APPROVER,
                      "--token", DEMO_TOKENS[APPROVER], *where),
            "submit": ("submit", file, *where)}


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return cli(*args, stdin=stdin, timeout=DEADLINE)
    except subprocess.TimeoutExpired:  # before: blocked in `open` until killed
        pytest.fail(f"`cradle-kg {args[0]}` hung on a FIFO")


@pytest.mark.parametrize("command", ["evidence", "input", "submit"])
def test_a_fifo_is_one_error_line_and_nothing_journaled(tmp_path: Path, command: str) -> None:
    home = fresh_home(tmp_path / "home")
    fifo = tmp_path / "incoming.json"
    os.mkfifo(fifo)
    done = _run(*_commands(home, str(fifo))[command])
    assert_refused(done, "not a regular file", "incoming.json")
    assert received(home) == 0  # nothing journaled (either journal)


def test_a_device_or_a_folder_is_not_read_as_evidence(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    for path in ("/dev/zero", str(tmp_path)):
        done = _run(*_commands(home, path)["evidence"])
        assert_refused(done, "not a regular file", path)
    assert received(home) == 0  # nothing journaled (either journal)


def test_regular_files_and_stdin_are_read_as_before(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    proposal = tmp_path / "credit.json"
    proposal.write_text(json.dumps(credit("p-281")), encoding="utf-8")
    done = _run(*_commands(home, str(proposal))["submit"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "executed"
    done = _run(*_commands(home, str(proposal))["evidence"])
    assert done.returncode == 0 and done.stdout.startswith("sha256:"), done.stderr
    done = _run(*_commands(home, "-")["input"], stdin="credit acct-f with 3")
    assert done.returncode == 0 and "recorded" in done.stdout, done.stderr
