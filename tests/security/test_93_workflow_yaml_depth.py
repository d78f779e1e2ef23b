"""A workflow file is refused past a nesting depth before it is composed: no 500, no minutes.

Finding (the fourth attack review): ``POST /api/workflows/validate`` checks a workflow file
sent as the body, and any token may send one (an agent's too). The body is capped at 256
KiB and YAML anchors, aliases and tags are refused — but the nesting was not bounded: the
file was read by PyYAML's pure-Python composer, which recurses once per level. A document
of 2,000 nested block sequences (``- - - … x``, 4 KB) or 2,000 nested flow mappings ended
in
``RecursionError``: an HTTP 500 with a traceback in the server's log; ``workflow validate
FILE`` and ``workflow list`` (``GET /api/workflows``, for a file in the home) ended in
``error: unexpected RecursionError``. Worse, the scanner revisits every open flow bracket
at each token: 20,000 ``[`` then 20,000 ``]`` (40 KB) took 26 s of CPU before the
recursion error, 100,000 of each (200 KB, inside the cap) 209 s — per request, any number
at once in the server's thread pool.

Now the depth is counted on PyYAML's event stream (lazy, not recursive) before anything is
composed, with the limit the other strict YAML reader already has
(:data:`cradle_kg.strict_yaml.MAX_DEPTH`, 32 levels): the first bracket past it stops the
read and the file is not valid, with its line — ``{"valid": false, "problems": ["…: nested
too deep …"]}`` over HTTP (0.5 s for the 200 KB one), one problem line and exit 1 from
``workflow validate``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import AGENT
from tests import oneshot

from ..inprocess import run_cli
from ..server.conftest import Server, make_demo_home, start_server, stop_server

#: 2,000 nested block sequences, written compactly on one line (4 KB)
DEEP_BLOCK = "- " * 2000 + "x\n"
#: 2,000 nested flow mappings on one line
DEEP_FLOW = "workflow: " + "{a: " * 2000 + "1" + "}" * 2000 + "\n"
#: flow brackets, the scanner's quadratic case (26 s of CPU before the RecursionError)
BRACKETS = "[" * 20_000 + "]" * 20_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    home = make_demo_home(tmp_path_factory.mktemp("wfdeep") / "home").path
    issued = run_cli("api-token", "issue", AGENT, "--home", str(home))
    assert issued.returncode == 0, issued.stderr
    srv = start_server(["--home", str(home)], home.parent / "server.log", home)
    try:
        yield srv, issued.stdout.strip()
    finally:
        stop_server(srv)


@pytest.mark.parametrize("body", [DEEP_BLOCK, DEEP_FLOW, BRACKETS],
                         ids=["block", "flow", "brackets"])
def test_an_agent_token_cannot_make_validate_recurse_or_spin(
        served: tuple[Server, str], body: str) -> None:
    srv, token = served
    started = time.monotonic()
    answer = oneshot.post(f"{srv.url}/api/workflows/validate", content=body.encode(),
                        headers={"Authorization": f"Bearer {token}"}, timeout=60)
    took = time.monotonic() - started
    # before: 500 Internal Server Error (RecursionError), the brackets after 26 s
    assert answer.status_code == 200, (answer.status_code, answer.text[:200])
    found = answer.json()
    assert found["valid"] is False
    assert any("nested too deep" in p for p in found["problems"]), found
    assert took < 10, took
    assert "RecursionError" not in srv.log.read_text(errors="replace")


def test_workflow_validate_says_which_line_is_too_deep(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text(DEEP_BLOCK)
    done = run_cli("workflow", "validate", str(deep))
    # before: `error: unexpected RecursionError: maximum recursion depth exceeded`, exit 2
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "unexpected" not in done.stderr
    assert f"{deep}:1: nested too deep (more than 32 levels)" in done.stdout


def test_a_deep_file_in_the_home_is_listed_as_not_valid(tmp_path: Path) -> None:
    from cradle_kg.workflow import runner

    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "deep.yaml").write_text(DEEP_FLOW)
    # before: RecursionError out of `workflow list` and `GET /api/workflows` (a 500)
    [listed] = runner.list_definitions(tmp_path)
    assert listed["valid"] is False
    assert "nested too deep" in listed["problems"][0]


def test_a_workflow_of_ordinary_depth_still_loads() -> None:
    from cradle_kg.workflow.definitions import load_file

    examples = Path(__file__).resolve().parents[2] / "examples" / "workflows"
    for file in sorted(examples.glob("*.yaml")):
        assert load_file(file).steps, file
