"""An inbox item of a human step carries a preview of its run's input, not all of it.

Finding (twentieth review, left then): each ``step`` item of ``GET /api/inbox`` (and of
``cradle-kg inbox --format json``, and of a run view's inbox) carried the run's whole input
as ``action.input``, and its question rendered from it. Where a workflow's input schema
leaves a string unbounded, its agent's runs put up to ``max_string_length`` (64 KiB) a
string, ``max_bytes`` (1 MiB) a run, in every poll of every approver's page: 60 runs with a
60,000-character note made one ``GET /api/inbox?limit=51`` about 6 MB (each note twice: in
the input and in the question).

Now an item carries the input whole only while its JSON is small
(``inbox.MAX_ITEM_INPUT_CHARS``); past that, a preview within that size (strings cut to
``MAX_PREVIEW_STRING`` characters, entries past the room counted, not listed), the input's
size, and where to read it whole (the run's workflow status, ``/api/workflows/runs/RUN``,
which still answers it whole); the question is cut at ``MAX_ITEM_QUESTION`` characters.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.preview import MAX_ITEM_INPUT_CHARS, MAX_ITEM_QUESTION
from cradle_kg.workflow import runner
from tests import oneshot

from ..server.cdp import browser
from ..server.conftest import Server, start_server, stop_server
from ..server.test_person_path import sign_in
from .homes import opened_demo_home

RUNS = 60
NOTE = "n" * 60_000
#: credit-review's shape with its note left unbounded (no ``maxLength``)
WORKFLOW = """workflow: open-note
version: "1"
agent: agent:ledger-assistant
input:
  type: object
  properties:
    account: {type: string}
    note: {type: string}
  required: [account, note]
  additionalProperties: false
steps:
  - id: review
    kind: human
    question: "Look at {account}? The agent says: {note}"
    answers: [look, skip]
    inputs: {account: input.account, note: input.note}
"""
AUTH = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, list[str]]]:
    home = opened_demo_home(tmp_path_factory, "t341")
    (home / "workflows").mkdir()
    path = home / "workflows" / "open-note.yaml"
    path.write_text(WORKFLOW, encoding="utf-8")
    runs = []
    with Runtime(home) as rt:
        engine = runner.open_engine(rt)
        for i in range(RUNS):
            out = runner.start(engine, path, {"account": f"acct-{i}", "note": NOTE})
            assert out["status"] == "waiting_human"
            runs.append(str(out["run_id"]))
        # one run whose input is small: carried whole, as before
        small = runner.start(engine, path, {"account": "acct-s", "note": "a short note"})
        runs.append(str(small["run_id"]))
    srv = start_server(["--home", str(home)], tmp_path_factory.mktemp("l341") / "s.log", home)
    yield srv, runs
    stop_server(srv)


def test_one_inbox_page_carries_previews_not_every_input(
        served: tuple[Server, list[str]]) -> None:
    server, runs = served
    response = oneshot.get(server.url + "/api/inbox?kind=step&limit=51", headers=AUTH,
                           timeout=60)
    assert response.status_code == 200, response.text
    items = response.json()
    assert len(items) == 51
    # before: 51 items, each 60,000 in the input and 60,000 in the question: 6.1 MB
    assert len(response.content) < 51 * (MAX_ITEM_INPUT_CHARS + MAX_ITEM_QUESTION + 2_000), \
        len(response.content)
    first = items[0]["action"]
    assert first["input_cut"] is True and first["input_bytes"] > 60_000
    assert first["input"]["account"] == "acct-0"
    assert first["input"]["note"].startswith("nnn") and first["input"]["note"].endswith("…")
    assert first["whole_input"] == f"/api/workflows/runs/{runs[0]}"
    assert len(items[0]["question"]) <= MAX_ITEM_QUESTION + 1
    assert items[0]["question"].endswith("…")


def test_a_small_input_is_carried_whole_and_the_whole_is_one_read_away(
        served: tuple[Server, list[str]]) -> None:
    server, runs = served
    small = oneshot.get(server.url + f"/api/inbox?kind=step&run={runs[-1]}", headers=AUTH,
                        timeout=60).json()
    assert small[0]["action"]["input"] == {"account": "acct-s", "note": "a short note"}
    assert small[0]["action"]["input_cut"] is False
    assert small[0]["question"] == "Look at acct-s? The agent says: a short note"
    whole = oneshot.get(server.url + f"/api/workflows/runs/{runs[0]}", headers=AUTH,
                        timeout=60).json()
    assert NOTE in json.dumps(whole)


@pytest.mark.slow
def test_the_page_says_the_input_is_cut_and_links_the_run(
        served: tuple[Server, list[str]], chromium: str) -> None:
    server, runs = served
    with browser(chromium) as page:
        page.open(server.url + "/#/approvals")
        sign_in(page)
        said = f"[data-input-cut={json.dumps(runs[0] + '/review')}]"
        text = page.wait_for(f"document.querySelector({json.dumps(said)})?.textContent")
        assert "the run's input is shown cut" in text and runs[0] in text, text
        link = page.js(f"document.querySelector({json.dumps(said)} + ' a').getAttribute('href')")
        assert link == "#/run/" + runs[0].replace(":", "%3A"), link


def test_the_cli_inbox_carries_the_same_preview(served: tuple[Server, list[str]]) -> None:
    server, runs = served
    assert server.home is not None
    done = subprocess.run(
        [sys.executable, "-m", "cradle_kg", "inbox", "--kind", "step", "--run", runs[1],
         "--format", "json", "--home", str(Path(server.home))],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) < MAX_ITEM_INPUT_CHARS + MAX_ITEM_QUESTION + 2_000, len(done.stdout)
    assert json.loads(done.stdout)[0]["action"]["input_cut"] is True
