"""The web page shows an agent's text as it is, not as its hidden characters make it read.

Finding (twentieth attack review): the CLI strips control characters and bidi overrides
from every value it prints (``clean``), but the web page — where a person answers what
waits for them — put the same values in the page as they were. The text is the
agent's: a workflow run's input (quoted by its human step's question), the arguments of
an action waiting for approval, reasons, run ids. The ledger agent started
``credit-review`` for 900 with the reason ``refund of a double charge: ⟨RLO⟩009 ton
,09⟨PDF⟩``; the inbox card read "… The agent says: refund of a double charge: 90, not
900" — words the agent never wrote in that order, which the approver would answer on.

Now every text the page writes (and every tooltip) shows the C0 and C1 controls, the
bidi marks, embeddings, overrides and isolates and the zero-width characters as
``\\uXXXX``: the value's own characters, in their own order.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest

from cradle_kg import Runtime
from cradle_kg.workflow import runner

from ..server.cdp import Browser, browser
from ..server.conftest import DemoHome, Server, make_demo_home, start_server, stop_server
from ..server.test_person_path import EXAMPLES, sign_in

pytestmark = pytest.mark.slow

REASON = "refund of a double charge: \u202e009 ton ,09\u202c"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    home: DemoHome = make_demo_home(tmp_path_factory.mktemp("t324") / "home")
    (home.path / "workflows").mkdir()
    shutil.copy(EXAMPLES / "credit-review.yaml", home.path / "workflows")
    with Runtime(home.path) as rt:
        out = runner.start(runner.open_engine(rt), home.path / "workflows" / "credit-review.yaml",
                           {"account": "acct-9", "amount": 900, "reason": REASON})
    assert out["status"] == "waiting_human"
    srv = start_server(["--home", str(home.path)], tmp_path_factory.mktemp("l324") / "s.log",
                       home.path)
    yield srv, str(out["run_id"])
    stop_server(srv)


@pytest.fixture
def page(chromium: str) -> Iterator[Browser]:
    with browser(chromium) as b:
        yield b


def test_the_inbox_and_the_run_show_the_agents_hidden_characters(
        served: tuple[Server, str], page: Browser) -> None:
    server, run = served
    page.open(server.url + "/#/approvals")
    sign_in(page)
    button = f"[data-step={json.dumps(run + '/review')}][data-answer=\"pay\"]"
    page.wait_for(f"!!document.querySelector({json.dumps(button)})")
    card = page.js(f"document.querySelector({json.dumps(button)}).closest('.card').textContent")
    # before: the override itself, the card reading "… 90, not 900"
    assert "\u202e" not in card and "\u202c" not in card, card
    assert "refund of a double charge: \\u202e009 ton ,09\\u202c" in card, card

    page.js(f"location.hash = '#/run/' + encodeURIComponent({json.dumps(run)})")
    step = page.wait_for("document.querySelector('li.step[data-step=\"review\"]')?.textContent")
    assert "\u202e" not in step and "\\u202e009 ton ,09\\u202c" in step, step
