"""An approval's inbox item carries a preview of a large action; the page shows it whole
before a person may approve.

Finding (twentieth review, left then): each ``approval`` item of ``GET /api/inbox`` (and of
``cradle-kg inbox --format json``) carried its action whole — up to
``MAX_ARGUMENTS_BYTES`` (64 KiB) an approval, 50 items a page, in every poll of every
approver's page. It was left because a person approves that action: a preview must not be
what is approved. Now an item carries the action whole only while its JSON is small
(``preview.MAX_ITEM_INPUT_CHARS``); past that, a preview, ``action_cut``, the action's size
and ``whole_action``: the approval's own view (``GET /api/approvals/{id}``), which carries
it whole. The page shows the preview said cut, and "Approve once" stays disabled until the
person has opened the whole action, which then replaces the preview.

A real pack with a free-text tool, a real runtime (its JSON API in process), a real
``cradle-kg serve`` driven by a real headless Chromium.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.preview import MAX_ITEM_INPUT_CHARS
from cradle_kg.records import OutcomeStatus

from ..server.cdp import browser
from ..server.conftest import Server, start_server, stop_server
from .homes import json_api
from .test_135_secret_digest_keyed import AGENT, TOKEN, _home

NOTE = "n" * 60_000
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _ask(rt: Runtime, pid: str, text: str) -> str:
    """An action of the ``note`` tool in production: it waits for a person."""
    out = rt.submit({"id": pid, "task_id": "t", "agent_id": AGENT, "run_id": f"run:{pid}",
                     "step": 0, "action": {"action_type": "note", "target": "account:alice",
                                           "environment": "production",
                                           "arguments": {"user": "alice", "text": text}}})
    assert out.status is OutcomeStatus.AWAITING_APPROVAL and out.approval is not None, out
    return out.approval.id


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    root = _home(tmp_path_factory.mktemp("t361"))
    with Runtime(root) as rt:
        big, small = _ask(rt, "big", NOTE), _ask(rt, "small", "a short note")
    yield root, big, small


def test_an_approval_item_carries_a_preview_and_the_whole_is_its_view(
        home: tuple[Path, str, str]) -> None:
    root, big, small = home
    with Runtime(root) as rt, json_api(rt) as api:
        response = api.get("/api/inbox?kind=approval", headers=AUTH)
        assert response.status_code == 200, response.text
        items = {i["id"]: i for i in response.json()}
        whole = api.get(f"/api/approvals/{big}", headers=AUTH).json()
    item = items[big]
    # before: the 60,000 characters of the note, whole, in the item
    assert len(json.dumps(item)) < MAX_ITEM_INPUT_CHARS + 2_000, len(json.dumps(item))
    assert item["action_cut"] is True and item["action_bytes"] > 60_000, item
    assert item["action"]["arguments"]["text"].endswith("…")
    assert item["whole_action"] == f"/api/approvals/{big}"
    assert whole["action"]["arguments"]["text"] == NOTE  # one read away, whole
    assert whole["approval"]["action_digest"] == item["digest"]
    assert items[small]["action_cut"] is False
    assert items[small]["action"]["arguments"]["text"] == "a short note"


@pytest.fixture(scope="module")
def served(home: tuple[Path, str, str],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(["--home", str(home[0])], tmp_path_factory.mktemp("l361") / "s.log",
                       home[0])
    yield srv
    stop_server(srv)


@pytest.mark.slow
def test_the_page_shows_the_whole_action_before_approve(
        home: tuple[Path, str, str], served: Server, chromium: str) -> None:
    _, big, small = home
    with browser(chromium) as page:
        page.open(served.url + "/#/approvals")
        page.wait_for("document.querySelector('#whoami')?.textContent")
        page.js(f"document.querySelector('#token').value = {json.dumps(TOKEN)}")
        page.js("document.querySelector('#token-use').click()")
        cut = f"[data-action-cut={json.dumps(big)}]"
        text = page.wait_for(f"document.querySelector({json.dumps(cut)})?.textContent")
        assert "the action is shown cut" in text, text
        approve = f"document.querySelector('[data-approve={json.dumps(big)}]')"
        assert page.js(f"{approve}.disabled") is True  # not on a preview
        assert page.js(f"document.querySelector('[data-approve={json.dumps(small)}]')"
                       ".disabled") is False
        page.js(f"document.querySelector('[data-whole-action={json.dumps(big)}]').click()")
        page.wait_for(f"!{approve}.disabled")
        shown = page.js(f"{approve}.closest('.card').querySelector('pre').textContent")
        assert NOTE in shown  # the whole action, in place of the preview
