"""An agent's inbox page reads the page, not every approval it skips.

Finding (seventh attack review): ``GET /api/inbox`` pages by ``offset``, but each kind was
read from the start to the end of the page and merged — every skipped item built as if
shown (each approval its request *and* the decision that asked, for its policies). An
agent's token sees its own approvals alone, and an agent asks for as many as it likes (one
action proposed again and again): with 10 and 30 of them waiting, ``?limit=1&offset=N``
for its last one decoded 20 and 60 event rows, each request — cost the agent sets and the
server pays, as often as it asks.

Now a page of one kind (an agent's inbox, or ``kind=`` one of them) is paged in the
journal's query: the page's rows are read, nothing before them — the same at 10 and 30.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cradle_kg.integrations.calls import GovernedSession

from .mcp_http import MALLORY
from .reads import rows_read
from .test_100_pending_approval_reads import CLOSE, _get
from .test_100_pending_approval_reads import served as served
from .test_120_inbox_pages import Served

pytestmark = pytest.mark.usefixtures("journal_backend")


def last_page_costs(served: Served, token: str, decoded: Callable[[], int],
                    sizes: tuple[int, int], waiting: int = 0) -> list[int]:
    """Rows decoded by ``?limit=1&offset=N`` for the last item of ``token``'s inbox, when it
    holds each of ``sizes`` items (Mallory asks for approvals until it does; ``waiting``
    were there already), its page checked against the whole inbox's last item."""
    rt, client, _ = served
    mallory = GovernedSession(rt, MALLORY)
    costs = []
    for asked in sizes:
        while waiting < asked:
            assert mallory.call(CLOSE, {"account": "acct-2"}).status == "awaiting_approval"
            waiting += 1
        whole = _get(client, token, "/api/inbox", limit=1000)
        assert len(whole) == asked
        n, page = rows_read(decoded, lambda asked=asked: _get(
            client, token, "/api/inbox", limit=1, offset=asked - 1))
        assert [i["id"] for i in page] == [whole[-1]["id"]]
        costs.append(n)
    return costs


def test_the_last_page_of_an_agents_inbox_costs_a_page(
        served: Served, decoded: Callable[[], int]) -> None:
    costs = last_page_costs(served, served[2][MALLORY], decoded, (10, 30))
    # before: 20 and 60 rows (every skipped approval's request and asking decision)
    assert costs[0] == costs[1] <= 4, costs
