"""A person's path in headless Chromium, on a real ``cradle-kg serve``.

Open the page, sign in, see a workflow run waiting, open it, read why it waits, answer
its human step in the inbox, watch the run complete — and a second run whose page updates
by itself when someone else answers it. Screenshots go to the test's own tmp folder.
Driven by the repo's own DevTools-pipe client (``cdp.py``); Chromium is Debian's package.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.workflow import runner
from tests import oneshot

from .cdp import Browser, browser
from .conftest import DemoHome, Server, make_demo_home, start_server, stop_server

#: a module whose set-up is long (servers, browsers, packs built): run first
pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workflows"
INPUT = {"account": "acct-5", "amount": 60, "reason": "a double charge"}
WAITING = "document.querySelector('#run-status')?.dataset.state === 'waiting_for_person'"
COMPLETED = "document.querySelector('#run-status')?.dataset.state === 'completed'"


def start_run(home: Path) -> str:
    with Runtime(home) as rt:
        out = runner.start(runner.open_engine(rt), home / "workflows" / "credit-review.yaml",
                           INPUT)
    assert out["status"] == "waiting_human"
    return str(out["run_id"])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, DemoHome, str]]:
    home = make_demo_home(tmp_path_factory.mktemp("person") / "home")
    (home.path / "workflows").mkdir()
    shutil.copy(EXAMPLES / "credit-review.yaml", home.path / "workflows")
    run = start_run(home.path)
    srv = start_server(["--home", str(home.path)], tmp_path_factory.mktemp("plog") / "s.log",
                       home.path)
    yield srv, home, run
    stop_server(srv)


@pytest.fixture
def page(chromium: str) -> Iterator[Browser]:
    with browser(chromium) as b:
        yield b


def click(page: Browser, selector: str) -> None:
    """Click an element as soon as it is there (the page refreshes parts of itself)."""
    page.wait_for(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
                  "if (e) e.click(); return !!e; })()")


def sign_in(page: Browser) -> None:
    page.wait_for("document.querySelector('#whoami')?.textContent")  # the scripts have run
    page.js(f"document.querySelector('#token').value = {json.dumps(DEMO_TOKENS[APPROVER])}")
    page.js("document.querySelector('#token-use').click()")
    page.wait_for(f"document.querySelector('#whoami').textContent.includes({json.dumps(APPROVER)})")


def test_a_person_answers_a_waiting_step_and_watches_the_run_complete(
        served: tuple[Server, DemoHome, str], page: Browser, tmp_path: Path) -> None:
    server, home, run = served
    shots = tmp_path / "screenshots"
    shots.mkdir()
    page.open(server.url + "/#/runs")
    sign_in(page)
    row = f"#runs-list tr[data-run={json.dumps(run)}]"
    assert page.wait_for(f"document.querySelector({json.dumps(row)})?.dataset.state"
                         ) == "waiting_for_person"
    assert page.wait_for("document.querySelector('#run-counts').innerText").count("waiting")
    page.screenshot(shots / "1-runs.png")

    click(page, row + " a.run")
    page.wait_for("document.querySelector('#run-status')?.dataset.state === "
                  "'waiting_for_person'")
    why = page.wait_for("document.querySelector('#run-why').innerText")
    assert "step `review` waits for a person" in why
    step = page.wait_for("document.querySelector('li.step[data-step=\"review\"]')?.innerText")
    assert "Credit 60 to acct-5? The agent says: a double charge" in step
    assert "answers: pay, hold" in step
    assert page.js("document.querySelector('li.step[data-step=\"pay\"]').dataset.state"
                   ) == "pending"
    assert not page.js("document.querySelector('#run-graph-box').open")  # one click away
    page.screenshot(shots / "2-why-it-waits.png")

    click(page, 'li.step[data-step="review"] a')  # to the inbox
    button = f"[data-step={json.dumps(run + '/review')}][data-answer=\"pay\"]"
    page.wait_for(f"!!document.querySelector({json.dumps(button)})")
    card = page.js(f"document.querySelector({json.dumps(button)}).closest('.card').innerText")
    assert "Credit 60 to acct-5?" in card and "acct-5" in card
    kinds = page.js("[...document.querySelectorAll('#inbox .card')].map(c => c.dataset.kind)")
    assert {"approval", "task", "step"} <= set(kinds)  # one inbox for all three
    page.screenshot(shots / "3-inbox.png")

    page.js(f"document.querySelector('[data-note={json.dumps(run + '/review')}]').value = "
            "'matches the bank statement'")
    click(page, button)
    said = page.wait_for("document.querySelector('[data-decided]') && "
                         "document.querySelector('#decision-result').textContent")
    assert f"run {run}: completed" in said
    page.screenshot(shots / "4-answered.png")

    click(page, "[data-decided] a")
    page.wait_for("document.querySelector('#run-status')?.dataset.state === 'completed'")
    lane = page.wait_for("document.querySelector('.lane') && "
                         "[...document.querySelectorAll('.lane .stage')].map(s => s.dataset.state)")
    assert lane == ["ok", "ok", "none", "ok", "ok", "ok", "ok"]
    assert page.js("document.querySelector('.lane').dataset.outcome") == "executed"
    hover = page.js("document.querySelector('.lane .stage[data-stage=\"decision\"]').title")
    assert "allow" in hover and "demo-ledger-agents" in hover  # the reasons, on hover
    click(page, "#run-graph-box summary")
    assert page.wait_for("document.querySelectorAll('#run-graph svg g.node').length > 3")
    page.screenshot(shots / "5-completed.png")
    assert len(list(shots.glob("*.png"))) == 5

    with Runtime(home.path) as rt:  # the journal agrees with the page
        assert runner.status(runner.open_engine(rt), run)["state"] == "completed"
        decided = [e for e in rt.journal.events(run_id=run) if e.kind == "human.decided"]
        assert decided[0].actor == APPROVER and decided[0].payload["note"] == (
            "matches the bank statement")


def open_a_waiting_run(served: tuple[Server, DemoHome, str], page: Browser) -> str:
    """A new run, waiting for a person: signed in, its page open and showing it waiting."""
    server, home, _ = served
    run = start_run(home.path)
    page.open(server.url + "/#/runs")
    sign_in(page)
    page.goto(server.url + "/#/run/" + run)
    page.wait_for(WAITING)
    return run


def test_the_run_page_updates_itself_when_someone_else_answers(
        served: tuple[Server, DemoHome, str], page: Browser) -> None:
    server, _, _ = served
    other = open_a_waiting_run(served, page)
    answer_through_the_api(server, other)
    # a refresh every 3 s; the bound is for a loaded machine (the page's ways of stopping
    # for good are the regression tests below)
    page.wait_for(COMPLETED, timeout=60)
    assert page.js("document.querySelector('li.step[data-step=\"pay\"]').dataset.state"
                   ) == "skipped"


# --- the run page's refresh (regressions: each test failed on the page before its fix) ---

def answer_through_the_api(server: Server, run: str) -> None:
    answered = oneshot.post(f"{server.url}/api/steps/{run}/review/decide",
                          json={"answer": "hold"}, timeout=30,
                          headers={"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"})
    assert answered.status_code == 200 and answered.json()["status"] == "completed"


def hold_answers(page: Browser, url_pattern: str) -> None:
    """From now on the page's requests to ``url_pattern`` are answered by the server, then
    held in the browser (``Fetch.requestPaused``) until the test lets each one go."""
    page.call("Fetch.enable", {"patterns": [{"urlPattern": url_pattern,
                                             "requestStage": "Response"}]})


def let_go(page: Browser, paused: dict[str, object]) -> None:
    page.call("Fetch.continueRequest", {"requestId": paused["requestId"]})


def test_the_run_page_keeps_refreshing_when_the_runs_list_answers_after_it(
        served: tuple[Server, DemoHome, str], page: Browser) -> None:
    """Signing in shows the runs list; a person who opens a run before that list's first
    answer came (it is slow under load) had a run page that never refreshed: the late list
    set its own refresh in place of the run page's (the flake of the test above, found on
    PostgreSQL under load)."""
    server, home, _ = served
    run = start_run(home.path)
    page.open(server.url + "/#/runs")
    page.wait_for("document.querySelector('#whoami')?.textContent")
    hold_answers(page, "*/api/overview*")
    sign_in(page)
    late = page.next_event("Fetch.requestPaused")  # the runs list waits for its counts
    page.goto(server.url + "/#/run/" + run)
    page.wait_for(WAITING)
    let_go(page, late)  # the list's answer comes now, for a view that was left
    page.call("Fetch.disable")
    answer_through_the_api(server, run)
    page.wait_for(COMPLETED, timeout=60)


def test_the_run_page_never_draws_an_older_state_over_a_newer_one(
        served: tuple[Server, DemoHome, str], page: Browser) -> None:
    """A refresh slower than the refresh interval (under load) had the next one overtake it:
    `completed` was drawn, the refresh stopped, then the older answer drew `waiting` for
    good."""
    server, _, _ = served
    run = open_a_waiting_run(served, page)
    page.js("window.drawn = []; new MutationObserver((records) => { for (const r of records) "
            "for (const n of r.addedNodes) if (n.id === 'run-status') "
            "window.drawn.push(n.dataset.state); })"
            ".observe(document.querySelector('#run-state'), { childList: true })")
    hold_answers(page, "*/api/runs/*/view*")
    slow = page.next_event("Fetch.requestPaused")  # answered `waiting`, held on its way
    answer_through_the_api(server, run)
    released = 0
    with contextlib.suppress(AssertionError):  # refreshes sent meanwhile go through
        while released < 3:
            let_go(page, page.next_event("Fetch.requestPaused", timeout=7))
            released += 1
    let_go(page, slow)
    page.call("Fetch.disable")
    page.wait_for(f"window.drawn.length > {released}")  # the slow answer was drawn
    page.wait_for(COMPLETED, timeout=60)
    drawn = page.js("window.drawn")
    assert drawn[-1] == "completed" and "completed" not in drawn[:-1], drawn


def test_the_run_page_refreshes_after_its_first_load_failed(
        served: tuple[Server, DemoHome, str], page: Browser) -> None:
    """A run page whose first load failed (a reset connection, a 503 under load) showed the
    error and never tried again, even after the run moved on."""
    server, home, _ = served
    run = start_run(home.path)
    page.open(server.url + "/#/runs")
    sign_in(page)
    page.call("Fetch.enable", {"patterns": [{"urlPattern": "*/api/runs/*/view*"}]})
    page.goto(server.url + "/#/run/" + run)
    first = page.next_event("Fetch.requestPaused")
    page.call("Fetch.failRequest", {"requestId": first["requestId"],
                                    "errorReason": "ConnectionReset"})
    page.wait_for("!!document.querySelector('#run-state .error')")  # the failure, shown
    page.call("Fetch.disable")  # (and what the page asked meanwhile goes through)
    page.wait_for(WAITING, timeout=60)
    answer_through_the_api(server, run)
    page.wait_for(COMPLETED, timeout=60)
