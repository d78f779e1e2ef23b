"""The web page in headless Chromium: open a run, see its graph, approve, see the run go on.

Chromium comes from Debian's ``chromium`` package: the test installs it with apt-get
when it is missing and the suite runs as root (as CI does); otherwise it is skipped
with a message saying so. Driven through the DevTools protocol over a pipe (cdp.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from tests import oneshot

from .cdp import Browser, browser
from .conftest import DemoHome, Server, make_demo_home, start_server, stop_server


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, DemoHome]]:
    home = make_demo_home(tmp_path_factory.mktemp("web") / "home")
    srv = start_server(["--home", str(home.path)], tmp_path_factory.mktemp("wlog") / "s.log",
                       home.path)
    yield srv, home
    stop_server(srv)


@pytest.fixture
def page(chromium: str) -> Iterator[Browser]:
    with browser(chromium) as b:
        yield b


def test_query_page_runs_a_named_query(web: tuple[Server, DemoHome], page: Browser) -> None:
    server, _ = web
    page.open(server.url + "/#/query")
    page.wait_for("document.querySelectorAll('#named button').length >= 10")
    page.js("document.querySelector('[data-query=\"denied-proposals\"]').click()")
    page.js("document.querySelector('#run-query').click()")
    text = page.wait_for("document.querySelector('#results table') && "
                         "document.querySelector('#results').innerText")
    assert "credits above 1000" in text
    assert "1 rows" in text


def test_open_a_run_approve_it_and_see_it_continue(web: tuple[Server, DemoHome],
                                                    page: Browser) -> None:
    server, home = web
    approval = home.waiting.approval
    assert approval is not None
    run = home.waiting.run_id
    page.open(server.url + "/#/runs")
    page.wait_for("!!document.querySelector('#runs-list a.run')")
    page.js(f"[...document.querySelectorAll('#runs-list a.run')]"
            f".find(a => a.textContent === {json.dumps(run)}).click()")
    kinds = page.wait_for("document.querySelectorAll('#run-graph svg g.node').length > 3 && "
                          "[...document.querySelectorAll('#run-graph svg g.node')]"
                          ".map(n => n.dataset.kind + ':' + (n.dataset.status || ''))")
    assert "proposal:" in kinds and "decision:RequireApproval" in kinds
    assert "approval:Pending" in kinds
    assert not any(k.startswith("transition") for k in kinds)
    assert page.js("document.querySelectorAll('#run-graph svg g.edge').length") >= 3

    page.goto(server.url + "/#/approvals")
    page.wait_for("!!document.querySelector('#token')")
    page.js(f"document.querySelector('#token').value = {json.dumps(DEMO_TOKENS[APPROVER])}")
    page.js("document.querySelector('#token-use').click()")
    page.wait_for(f"!!document.querySelector('[data-approve={json.dumps(approval.id)}]')")
    assert APPROVER in page.js("document.querySelector('#whoami').textContent")
    page.js(f"document.querySelector('[data-approve={json.dumps(approval.id)}]').click()")
    said = page.wait_for("document.querySelector('[data-decided]') && "
                         "document.querySelector('#decision-result').textContent")
    assert "approved" in said and "continued: executed" in said

    page.js("document.querySelector('[data-decided] a').click()")
    kinds = page.wait_for("[...document.querySelectorAll('#run-graph svg g.node')]"
                          ".some(n => n.dataset.kind === 'transition') && "
                          "[...document.querySelectorAll('#run-graph svg g.node')]"
                          ".map(n => n.dataset.kind + ':' + (n.dataset.status || ''))")
    assert "transition:Committed" in kinds and "verification:Verified" in kinds
    assert "approval:Approved" in kinds
    page.js("document.querySelector('#run-timeline-box summary').click()")  # one click away
    timeline = page.wait_for("document.querySelector('#run-timeline').innerText")
    assert "transition.committed" in timeline and "approval.decided" in timeline
    runs = oneshot.get(server.url + "/api/runs",
                     headers={"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}).json()
    assert {r["run_id"]: r["status"] for r in runs}[run] == "executed"


def test_every_asset_is_served_by_the_server(web: tuple[Server, DemoHome]) -> None:
    server, _ = web
    html = oneshot.get(server.url + "/").text
    links = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert links and all(link.startswith(("/", "#")) for link in links), links
    for asset in ("/static/app.js", "/static/people.js", "/static/app.css"):
        body = oneshot.get(server.url + asset)
        assert body.status_code == 200
        # the only absolute IRIs are RDF namespaces, compared to, never fetched
        assert not re.search(r"(fetch|import|url)\(\s*[`'\"]https?:", body.text)
    static = Path(__file__).resolve().parents[2] / "cradle_kg" / "server" / "static"
    assert {p.name for p in static.iterdir()} == {"index.html", "app.js", "people.js",
                                                  "app.css", "docs.html", "docs.js",
                                                  "swagger"}
    # /docs: Swagger UI vendored beside the page, nothing from a CDN
    docs = oneshot.get(server.url + "/docs").text
    links = re.findall(r'(?:src|href)="([^"]*)"', docs)
    assert links and all(link.startswith("/static/") for link in links), links
    for link in links:
        assert oneshot.get(server.url + link).status_code == 200, link
