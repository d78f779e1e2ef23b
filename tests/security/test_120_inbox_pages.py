"""The inbox is read a page at a time, and its size is counted without reading it.

Finding (noticed after the fifth review, ``test_100``): the approvals of the inbox were read
one request each, but *every* pending item was read, rendered and returned, by
``GET /api/inbox``, by ``cradle-kg inbox`` and — only to be counted — by
``GET /api/overview``, which the web page polls every 3 s for its badge. An agent asks for as
many approvals as it likes (one action proposed again and again: ``test_87``): with 13 and
33 items waiting, each overview poll decoded 23 and 63 event rows (each request, and the
decision that asked, for its policies), and the inbox answer grew without bound.

Now the overview counts the derived tables (``undecided_approvals``, ``human_tasks``,
``open_steps``: :func:`cradle_kg.inbox.inbox_size`) and decodes no item; the inbox is a page
(``limit``, 200 by default over HTTP, 100 on the CLI; ``offset``), each kind read oldest
first to the end of the page and merged; the page says how many are left.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from cradle_kg import Runtime
from cradle_kg.cli import app
from cradle_kg.demo.scenario import APPROVER
from cradle_kg.inbox import inbox, inbox_size
from cradle_kg.integrations.calls import GovernedSession

from .mcp_http import MALLORY
from .reads import rows_read
from .test_73_task_resolve_reads import _escalate as escalate
from .test_100_pending_approval_reads import CLOSE, _get
from .test_100_pending_approval_reads import served as served

pytestmark = pytest.mark.usefixtures("journal_backend")

Served = tuple[Runtime, TestClient, dict[str, str]]


@pytest.fixture
def waiting(served: Served) -> Iterator[Served]:
    """Five approvals asked for by another agent, three human tasks, five approvals more."""
    rt = served[0]
    mallory = GovernedSession(rt, MALLORY)
    for _ in range(5):
        assert mallory.call(CLOSE, {"account": "acct-2"}).status == "awaiting_approval"
    assert len(escalate(rt, 3, run="esc")) == 3
    for _ in range(5):
        assert mallory.call(CLOSE, {"account": "acct-2"}).status == "awaiting_approval"
    yield served


def test_pages_of_the_inbox_add_up_to_the_whole_in_order(waiting: Served) -> None:
    rt, client, tokens = waiting
    whole = inbox(rt)
    assert [i.kind for i in whole] == ["approval"] * 5 + ["task"] * 3 + ["approval"] * 5
    assert inbox_size(rt) == 13
    pages = [inbox(rt, limit=4, offset=offset) for offset in range(0, 16, 4)]
    assert [i.id for page in pages for i in page] == [i.id for i in whole]
    assert [len(p) for p in pages] == [4, 4, 4, 1]
    assert inbox_size(rt, kinds=("task",)) == 3 and inbox_size(rt, run_id="run:esc") == 3
    assert inbox_size(rt, requested_by=MALLORY) == 10  # an agent's: its approvals alone
    approver = tokens[APPROVER]
    http = [i["id"] for i in _get(client, approver, "/api/inbox", limit=4, offset=4)]
    assert http == [i.id for i in whole[4:8]]
    assert [i["id"] for i in _get(client, approver, "/api/inbox")] == [i.id for i in whole]
    for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"limit": "x"}):
        answer = client.get("/api/inbox", params=bad,
                            headers={"Authorization": f"Bearer {approver}"})
        assert answer.status_code == 422, (bad, answer.text)


def test_the_overview_counts_the_inbox_without_reading_it(
        waiting: Served, decoded: Callable[[], int]) -> None:
    rt, client, tokens = waiting
    approver, mallory = tokens[APPROVER], GovernedSession(rt, MALLORY)

    def poll() -> tuple[int, int, int]:
        n, overview = rows_read(decoded, lambda: _get(client, approver, "/api/overview"))
        m, page = rows_read(decoded, lambda: _get(client, approver, "/api/inbox", limit=2))
        assert len(page) == 2
        return overview["inbox"], n, m

    size, few, page_few = poll()
    for _ in range(20):
        assert mallory.call(CLOSE, {"account": "acct-2"}).status == "awaiting_approval"
    more, many, page_many = poll()
    # before: the overview decoded every pending item to count it (13 → 33 requests and
    # their asking decisions) and the inbox returned all of them
    assert (size, more) == (13, 33)
    assert many == few == 0, (few, many)
    assert page_many == page_few, (page_few, page_many)
    assert _get(client, tokens[MALLORY], "/api/overview")["inbox"] == 30


def test_the_cli_shows_a_page_and_says_what_is_left(waiting: Served, tmp_path: Path) -> None:
    rt = waiting[0]
    home = ["--home", str(rt.home.root)]
    runner = CliRunner()
    out = runner.invoke(app, ["inbox", "--limit", "4", "--offset", "4", "--format", "json",
                              *home])
    assert out.exit_code == 0, out.output
    table = runner.invoke(app, ["inbox", "--limit", "4", *home])
    assert table.exit_code == 0 and "1 to 4 of 13 items; more with --offset 4" in table.output
    last = runner.invoke(app, ["inbox", "--limit", "4", "--offset", "12", *home])
    assert last.exit_code == 0 and "more with" not in last.output
