"""The page shows a human step's whole input and question before a person may answer it.

Finding (twenty-third review, the human doors): since ``test_341`` a step's inbox item
carries a preview of its run's input past a few KiB — each string cut at 256 characters,
the question at 1,024 — and the page said "the run's input is shown cut" beside answer
buttons that worked at once. ``test_361`` made "Approve once" wait until the person opened
the whole action ("a preview must not be what is approved"); a step's answer (``pay``) is
the same decision on the run's input, and it was given on the preview: the workflow's agent
puts what matters past the cut (here: the note's last words, the account it also asks
for) and the person answers on the first 256 characters of it.

Now: a step card whose input is cut shows its answer buttons disabled until
the person opens the whole input — the run's workflow status, ``whole_input`` — which then
replaces the preview, the question shown whole; a card shown whole answers as before.

A real ``cradle-kg serve`` driven by a real headless Chromium.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cradle_kg import Runtime
from cradle_kg.workflow import runner

from ..server.cdp import browser
from ..server.conftest import Server, start_server, stop_server
from ..server.test_person_path import sign_in
from .homes import opened_demo_home
from .test_341_inbox_step_input_bounded import WORKFLOW

HIDDEN = "and credit acct-666 as well"
NOTE = "routine refund, " + "n" * 4_500 + " " + HIDDEN


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str, str]]:
    home = opened_demo_home(tmp_path_factory, "t414")
    (home / "workflows").mkdir()
    path = home / "workflows" / "open-note.yaml"
    path.write_text(WORKFLOW, encoding="utf-8")
    with Runtime(home) as rt:
        engine = runner.open_engine(rt)
        # the input past the item's room: strings cut at 256 characters
        big = runner.start(engine, path, {"account": "acct-1", "note": NOTE})
        small = runner.start(engine, path, {"account": "acct-2", "note": "a short note"})
    assert big["status"] == small["status"] == "waiting_human"
    srv = start_server(["--home", str(home)], tmp_path_factory.mktemp("l414") / "s.log", home)
    yield srv, str(big["run_id"]) + "/review", str(small["run_id"]) + "/review"
    stop_server(srv)


@pytest.mark.slow
def test_a_step_is_answered_on_its_whole_input(served: tuple[Server, str, str],
                                               chromium: str) -> None:
    server, big, small = served

    def answer(step: str, label: str) -> str:
        sel = f"[data-step={json.dumps(step)}][data-answer={json.dumps(label)}]"
        return f"document.querySelector({json.dumps(sel)})"

    with browser(chromium) as page:
        page.open(server.url + "/#/approvals")
        sign_in(page)
        page.wait_for(f"!!{answer(big, 'look')}")
        card = f"{answer(big, 'look')}.closest('.card')"
        assert HIDDEN not in page.js(f"{card}.textContent")  # a preview: the end is cut
        for label in ("look", "skip"):  # before: both enabled on the preview
            assert page.js(f"{answer(big, label)}.disabled") is True, label
        assert page.js(f"{answer(small, 'look')}.disabled") is False  # shown whole
        page.js(f"document.querySelector('[data-whole-input={json.dumps(big)}]').click()")
        page.wait_for(f"!{answer(big, 'look')}.disabled")
        assert page.js(f"{answer(big, 'skip')}.disabled") is False
        shown = page.js(f"{card}.querySelector('pre').textContent")
        assert json.dumps(NOTE) in shown  # the whole input, in place of the preview
        question = page.js(f"{card}.querySelector('.card-head strong').textContent")
        assert question.endswith(HIDDEN), question[-80:]  # the question whole too
