"""The web inbox is read a page at a time, with previous/next, the kind filter kept.

Before, the page (``people.js``) read ``GET /api/inbox`` once, with the API's default page
(the oldest 200), and said how many more waited: an approver with more pending items than
one page could not reach the rest from the web page. Now it pages with the API's own
``limit``/``offset`` (one item more than it shows, to know whether a next page exists), a
kind filter (all, approval, task, step) kept while paging, and each approval's card says
the tool version it covers.

The API-level test is the paging the page relies on; the browser test drives the page in
headless Chromium (``cdp.py``; Debian's ``chromium``, installed when missing as root).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from tests import oneshot

from .cdp import Browser, browser
from .conftest import DemoHome, Server, close_proposal, make_demo_home, start_server, stop_server

#: a module whose set-up is long (a server, a browser): run first
pytestmark = pytest.mark.slow

AUTH = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
CLOSE = "demo.ledger.close_account"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, DemoHome]]:
    """The demo home with four more closes waiting (five approvals in all)."""
    home = make_demo_home(tmp_path_factory.mktemp("pager") / "home")
    with Runtime(home.path) as rt:
        for account in ("acct-3", "acct-4", "acct-5", "acct-6"):
            assert rt.submit(close_proposal(account)).approval is not None
    srv = start_server(["--home", str(home.path)], tmp_path_factory.mktemp("pglog") / "s.log",
                       home.path)
    yield srv, home
    stop_server(srv)


def _inbox(server: Server, **params: Any) -> list[dict[str, Any]]:
    answer = oneshot.get(server.url + "/api/inbox", params=params, headers=AUTH)
    assert answer.status_code == 200, answer.text
    return list(answer.json())


def _pages(server: Server, size: int, kind: str | None = None) -> list[list[str]]:
    """The ids of each page the web page shows, read as it reads them: ``size + 1`` items
    from each offset, the last one only saying that a next page exists."""
    pages, offset = [], 0
    while True:
        got = _inbox(server, limit=size + 1, offset=offset, **({"kind": kind} if kind else {}))
        pages.append([i["id"] for i in got[:size]])
        if len(got) <= size:
            return pages
        offset += size


def test_the_pages_the_web_page_reads_add_up_to_the_inbox(
        served: tuple[Server, DemoHome]) -> None:
    server, _ = served
    whole = _inbox(server)
    approvals = [i["id"] for i in whole if i["kind"] == "approval"]
    assert len(approvals) == 5
    for size in (1, 2, 3):
        pages = _pages(server, size)
        assert [i for p in pages for i in p] == [i["id"] for i in whole]
        assert all(len(p) == size for p in pages[:-1]) and pages[-1]
        kept = _pages(server, size, "approval")  # the kind filter kept while paging
        assert [i for p in kept for i in p] == approvals
    # each approval says the version of the tool it covers; the tool has not changed
    tools = [i["tool"] for i in whole if i["kind"] == "approval"]
    assert all(t["asked"].startswith(CLOSE + "@") and t["asked"] == t["now"]
               and not t["changed"] and t["note"] is None for t in tools), tools


@pytest.fixture
def page(chromium: str) -> Iterator[Browser]:
    with browser(chromium) as b:
        yield b


def _shown(page: Browser) -> list[str]:
    return list(page.js("[...document.querySelectorAll('#inbox .card')]"
                        ".map(c => c.dataset.approval || c.dataset.item)"))


def _wait_shown(page: Browser, ids: list[str]) -> None:
    page.wait_for("JSON.stringify([...document.querySelectorAll('#inbox .card')]"
                  ".map(c => c.dataset.approval || c.dataset.item)) === "
                  + json.dumps(json.dumps(ids, separators=(",", ":"))))


def _disabled(page: Browser, which: str) -> bool:
    return bool(page.js(f"document.querySelector('[data-inbox-page=\"{which}\"]').disabled"))


def test_the_web_inbox_pages_with_previous_and_next(
        served: tuple[Server, DemoHome], page: Browser) -> None:
    server, _ = served
    whole = [i["id"] for i in _inbox(server)]
    approvals = [i["id"] for i in _inbox(server, kind="approval")]
    page.open(server.url + "/#/approvals")
    page.wait_for("document.querySelector('#whoami')?.textContent")  # the scripts have run
    page.js("inboxPageSize = 2")  # two a page: the five approvals (and any task) need three
    page.js(f"document.querySelector('#token').value = {json.dumps(DEMO_TOKENS[APPROVER])}")
    page.js("document.querySelector('#token-use').click()")

    _wait_shown(page, whole[:2])
    assert _disabled(page, "prev") and not _disabled(page, "next")
    said = page.js("document.querySelector('#inbox-range').textContent")
    assert said == f"items 1 to 2 of {len(whole)}, oldest first", said
    # the card says the tool version the approval covers, and no warning (it did not change)
    card = page.js(f"document.querySelector('[data-approval={json.dumps(approvals[0])}]')"
                   ".innerText")
    assert "tool version" in card and CLOSE + "@" in card, card
    assert page.js("document.querySelectorAll('[data-tool-changed]').length") == 0

    page.js("document.querySelector('[data-inbox-page=\"next\"]').click()")
    _wait_shown(page, whole[2:4])
    assert not _disabled(page, "prev")
    pages = [whole[:2], whole[2:4]]
    while not _disabled(page, "next"):
        page.js("document.querySelector('[data-inbox-page=\"next\"]').click()")
        start = 2 * len(pages)
        _wait_shown(page, whole[start:start + 2])
        pages.append(whole[start:start + 2])
    assert [i for p in pages for i in p] == whole  # every item reachable from the page
    page.js("document.querySelector('[data-inbox-page=\"prev\"]').click()")
    _wait_shown(page, pages[-2])

    # a kind chosen starts again at the first page, and is kept while paging
    page.js("document.querySelector('[data-inbox-kind=\"approval\"]').click()")
    _wait_shown(page, approvals[:2])
    assert page.js("document.querySelector('#inbox-range').textContent") == \
        "items 1 to 2, oldest first"
    page.js("document.querySelector('[data-inbox-page=\"next\"]').click()")
    _wait_shown(page, approvals[2:4])
    page.js("document.querySelector('[data-inbox-page=\"next\"]').click()")
    _wait_shown(page, approvals[4:])
    assert _disabled(page, "next") and not _disabled(page, "prev")
    assert page.js("document.querySelector('[data-inbox-kind=\"approval\"]')"
                   ".classList.contains('active')")


def test_a_card_warns_when_the_tool_changed_and_the_answer_says_so(
        served: tuple[Server, DemoHome], page: Browser) -> None:
    """The card of an approval whose tool changed since it was asked for says so before its
    buttons, as text (a tool's id is the pack's to choose: never parsed as HTML); and the
    answer of its decision says it covers nothing now. The served home's tool cannot be
    upgraded under a running server, so the page's own ``card``/``said`` are given the API's
    shape of such an item (``tests/test_approval_tool_views.py`` has the API's side)."""
    server, _ = served
    page.open(server.url + "/#/query")
    page.wait_for("document.querySelector('#whoami')?.textContent")  # the scripts have run
    note = ("asked under `x.erase@1`; the tool is now `x.erase@<b>2</b>`: approving covers "
            "only `x.erase@1`, so the action will ask a person again under `x.erase@<b>2</b>`")
    item = {"kind": "approval", "id": "apr:1", "run_id": "run:1", "title": "x.erase on x:1",
            "asked_at": "2026-01-01T00:00:00+00:00", "reasons": [], "action": {},
            "digest": "sha256:0", "policies": [], "evidence": [], "step": None,
            "question": None, "answers": [], "proposed_by": "agent:a", "command": "",
            "tool": {"asked": "x.erase@1", "now": "x.erase@<b>2</b>", "changed": True,
                     "note": note}}
    page.js(f"document.body.append(card({json.dumps(item)}))")
    warning = page.js("document.querySelector('[data-tool-changed=\"apr:1\"]').textContent")
    assert warning == note
    facts = page.js("document.querySelector('[data-approval=\"apr:1\"] .facts').innerText")
    assert "tool version\tx.erase@1" in facts and "tool now\tx.erase@<b>2</b>" in facts, facts
    assert page.js("document.querySelectorAll('[data-approval=\"apr:1\"] b').length") == 0
    # said before the buttons
    assert page.js("(() => { const c = document.querySelector('[data-approval=\"apr:1\"]');"
                   " return c.querySelector('[data-tool-changed]').compareDocumentPosition("
                   "c.querySelector('[data-approve]')) === Node.DOCUMENT_POSITION_FOLLOWING;"
                   " })()")
    answer = {"approval": {"status": "approved"},
              "outcome": {"run_id": "run:1", "status": "awaiting_approval"},
              "tool": item["tool"]}
    said = page.js(f"said({json.dumps(item)}, {json.dumps(answer)})")
    assert said == f"apr:1: approved — run run:1 continued: awaiting_approval — {note}"
