"""A person's JSON answer to a human step, and a workflow's input on the command line, go
through the strict loader.

Finding: a human step may be answered with the whole output as a JSON object (``--answer
'{...}'`` on ``cradle-kg step decide``, ``{"answer": "{...}"}`` on ``POST
/api/steps/{run}/{step}/decide``), and ``cradle-kg workflow run --input`` takes the run's
input as JSON. Both were read by ``json.loads``, not by the loader every other document
from a person or an agent goes through (the README's "Input limits"):

* a key given twice was taken last-wins, silently: ``{"answer": "hold", "answer": "pay"}``
  was journaled as ``pay`` and the credit the review held back was made; an input naming
  ``amount`` twice started the run with the second;
* a deeply nested answer (5,000 brackets, well inside the API's 10,000 characters) was an
  HTTP 500 with a traceback in the server's log (``RecursionError``), and ``error:
  unexpected RecursionError`` on the command line;
* ``NaN`` and numbers past the input limits were read as numbers.

Now both are read by :func:`cradle_kg.inputs.load_json` under the home's limits: one typed
refusal (422 over HTTP, one ``error:`` line and exit 2 on the command line) naming the
answer or the input, nothing journaled, the step still waiting.

A real ``cradle-kg serve`` over the demo home with the ``credit-review`` workflow (its agent
is the demo's; ``user:bob`` reviews), and the real command line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, REQUESTER
from tests import oneshot

from ..inprocess import run_cli
from ..server.conftest import start_server, stop_server
from .inputcli import fresh_home

ROOT = Path(__file__).resolve().parents[2]
FLOW = ROOT / "examples" / "workflows" / "credit-review.yaml"
INPUT = {"account": "acct-3", "amount": 15, "reason": "refund"}
DEEP = '{"answer": "pay", "x": ' + "[" * 5000 + "]" * 5000 + "}"


def _home(root: Path) -> Path:
    fresh_home(root)
    (root / "workflows").mkdir()
    shutil.copy(FLOW, root / "workflows")
    Runtime(root).close()
    return root


def _run_events(home: Path, run: str) -> list[Any]:
    with Runtime(home, graph_sync=False) as rt:
        return list(rt.journal.events(run_id=run))


def test_an_answer_over_the_api_is_read_strictly(tmp_path: Path) -> None:
    home = _home(tmp_path / "home")
    srv = start_server(["--home", str(home)], tmp_path / "serve.log", home)
    bob = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
    # alice asks for the runs (an approver may start one), bob reviews them: who started a
    # run does not answer its human steps (test_177)
    alice = {"Authorization": f"Bearer {DEMO_TOKENS[REQUESTER]}"}
    try:
        def start() -> str:
            began = oneshot.post(f"{srv.url}/api/workflows/credit-review/runs", headers=alice,
                               json={"input": INPUT}, timeout=60)
            assert began.status_code == 200, began.text
            assert began.json()["status"] == "waiting_human", began.text
            return str(began.json()["run_id"])

        def answer(run: str, text: str) -> httpx.Response:
            return oneshot.post(f"{srv.url}/api/steps/{run}/review/decide", headers=bob,
                              json={"answer": text}, timeout=60)

        run = start()
        before = len(_run_events(home, run))
        twice = answer(run, '{"answer": "hold", "answer": "pay"}')
        # before: 200 `completed` — journaled as `pay`, and the credit was made
        assert twice.status_code == 422, twice.text
        assert "answer" in twice.json()["detail"]["message"], twice.text
        deep = answer(run, DEEP)
        assert deep.status_code == 422, deep.text  # before: 500, a traceback in the log
        nan = answer(run, '{"answer": "pay", "answer2": NaN}')
        assert nan.status_code == 422, nan.text
        assert len(_run_events(home, run)) == before  # nothing journaled: still waiting
        assert "Traceback" not in srv.log.read_text(errors="replace")
        held = answer(run, '{"answer": "hold"}')  # a well-formed object, and a plain word
        assert held.status_code == 200 and held.json()["status"] == "completed", held.text
        assert held.json()["outputs"] == {"review": {"answer": "hold"}}, held.text
        paid = answer(start(), "pay")
        assert paid.status_code == 200 and paid.json()["outputs"]["pay"]["ok"], paid.text
    finally:
        stop_server(srv)


def test_an_answer_on_the_command_line_is_read_strictly(tmp_path: Path) -> None:
    home = _home(tmp_path / "home")
    started = run_cli("workflow", "run", "credit-review", "--input", json.dumps(INPUT),
                  "--home", str(home), "--format", "json")
    assert started.returncode == 0, started.stderr
    run = json.loads(started.stdout)["run_id"]
    before = len(_run_events(home, run))
    for text in ('{"answer": "hold", "answer": "pay"}', DEEP):
        done = run_cli("step", "decide", run, "review", "--as", APPROVER, "--answer", text,
                   "--home", str(home), env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
        # before: exit 0 (`pay`), and `error: unexpected RecursionError`
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert done.stderr.startswith("error: `answer`: "), done.stderr
        assert "unexpected" not in done.stderr
    assert len(_run_events(home, run)) == before


@pytest.mark.parametrize("given", [
    '{"account": "acct-3", "amount": 15, "reason": "refund", "amount": 900}',
    '{"account": "acct-3", "amount": NaN, "reason": "refund"}',
    '{"account": "acct-3", "amount": 1' + "0" * 30 + ', "reason": "refund"}',
])
def test_a_workflow_input_on_the_command_line_is_read_strictly(tmp_path: Path,
                                                               given: str) -> None:
    home = _home(tmp_path / "home")
    done = run_cli("workflow", "run", "credit-review", "--input", given, "--home", str(home))
    # before: the first started a run for 900 (and waited for its review)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error: `--input`: "), done.stderr
    with Runtime(home, graph_sync=False) as rt:
        assert not list(rt.journal.events_of_kind("workflow.started"))
