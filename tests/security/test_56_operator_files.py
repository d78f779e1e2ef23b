"""Files an operator names on the command line, or that a folder of the home holds: a
workflow file, a SPARQL file (``query --file``, a ``--queries`` folder), RDF to validate,
an MCP proxy's contracts.

Findings:

* **a FIFO hung the command for ever.** Each was read with ``read_text`` or ``open`` then
  ``read``, which block on a FIFO until some process writes to it: ``workflow validate``,
  ``query --file`` and ``validate`` never answered, and one FIFO named ``*.yaml`` in the
  home's ``workflows/`` hung ``workflow list`` (and ``GET /api/workflows``, and
  ``autonomy``'s listing of human steps); one named ``*.rq`` in a ``--queries`` folder hung
  every ``query``; ``mcp proxy --contracts`` never started. Only a regular file is read
  now (opened without blocking, checked on its descriptor: it cannot be swapped in
  between): one ``error:`` line naming the file, exit 2; ``workflow list`` shows that
  file as not valid and lists the others.
* **a file of any size was read whole before its size was looked at.** ``query --file``
  read a 300 MB SPARQL file (to 690 MB of memory) before refusing it as over the 100 KB
  cap of a query; ``validate`` read and parsed a 300 MB Turtle file (1.9 GB of memory).
  A 4 GiB file — sparse here, nothing on disk — ended either under a 3 GiB ceiling in an
  ``unexpected MemoryError``. The size is now checked before reading: at most the 100 KB
  of a query, and 64 MiB of RDF (the largest document the runtime takes; a home's own
  graph is validated in its store, ``validate --all``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import AGENT

from .inputcli import assert_refused, cli, fresh_home

#: a deadline well past a command's run: it ends only a command that hangs
DEADLINE = 60

WORKFLOW = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "credit-review.yaml"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return cli(*args, timeout=DEADLINE)
    except subprocess.TimeoutExpired:  # before: blocked in read until killed
        pytest.fail(f"`cradle-kg {' '.join(args[:2])}` hung on a FIFO")


def _commands(home: Path, file: Path) -> dict[str, tuple[str, ...]]:
    return {"workflow.yaml": ("workflow", "validate", str(file), "--home", str(home)),
            "query.rq": ("query", "--file", str(file), "--home", str(home)),
            "data.ttl": ("validate", str(file), "--home", str(home)),
            "contracts.yaml": ("mcp", "proxy", "--contracts", str(file), "--home", str(home),
                               "--agent", AGENT, "--", "true")}


@pytest.mark.parametrize("name", ["workflow.yaml", "query.rq", "data.ttl", "contracts.yaml"])
def test_a_fifo_named_on_the_command_line_is_refused_not_waited_on(tmp_path: Path,
                                                                   name: str) -> None:
    home = fresh_home(tmp_path / "home")
    fifo = tmp_path / name
    os.mkfifo(fifo)
    done = _run(*_commands(home, fifo)[name])
    assert_refused(done, "not a regular file", name)


def test_a_fifo_in_the_homes_workflows_is_listed_as_not_valid(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    (home / "workflows").mkdir()
    (home / "workflows" / "credit-review.yaml").write_bytes(WORKFLOW.read_bytes())
    os.mkfifo(home / "workflows" / "incoming.yaml")
    done = _run("workflow", "list", "--home", str(home), "--format", "json")
    assert done.returncode == 0, done.stderr
    found = {w["id"]: w for w in json.loads(done.stdout)}
    assert found["incoming"]["valid"] is False
    assert "not a regular file" in found["incoming"]["problems"][0]
    assert found["credit-review"]["valid"] is True


def test_a_fifo_in_a_query_folder_is_refused_not_waited_on(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    folder = tmp_path / "queries"
    folder.mkdir()
    os.mkfifo(folder / "incoming.rq")
    done = _run("query", "--queries", str(folder), "--list", "--home", str(home))
    assert_refused(done, "not a regular file", "incoming.rq")


@pytest.mark.parametrize("name", ["query.rq", "data.ttl"])
def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path, name: str) -> None:
    home = fresh_home(tmp_path / "home")
    huge = tmp_path / name
    with huge.open("wb") as handle:  # sparse: 4 GiB long, nothing written to disk
        handle.truncate(4 * 1024**3)
    done = _run(*_commands(home, huge)[name])
    # before: read whole under the 3 GiB ceiling, `error: unexpected MemoryError`
    assert_refused(done, "more than the limit of", name)
