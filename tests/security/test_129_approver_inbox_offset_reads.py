"""An approver's inbox page of several kinds reads the page, not every item it skips.

Finding (seventh attack review, left open after ``test_126``): a page of one kind was paged
in the journal's query, but a page of several kinds — an approver's ``GET /api/inbox``,
``cradle-kg inbox`` — still read each kind from its start to the end of the page and merged:
every item an ``offset`` skipped was built as if shown (each approval its request and the
decision that asked, for its policies). Any agent adds to an approver's inbox as often as it
likes (one action proposed again and again): with 13 and 33 items waiting, the approver's
``?limit=1&offset=N`` for the last one decoded 23 and 63 event rows.

Now the page's order is read from the derived tables (each item's kind and its rank among
its kind, nothing decoded: :func:`cradle_kg.storage.tasks_sql.inbox_order`), and only the
page's items are built, each kind's run of them one page of its own query: the same rows at
13 and 33, and the pages still add up to the whole, in order (``test_120``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cradle_kg.demo.scenario import APPROVER
from cradle_kg.inbox import inbox

from .test_100_pending_approval_reads import served as served
from .test_120_inbox_pages import Served
from .test_120_inbox_pages import waiting as waiting
from .test_126_inbox_offset_reads import last_page_costs

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_the_last_page_of_an_approvers_inbox_costs_a_page(
        waiting: Served, decoded: Callable[[], int]) -> None:
    costs = last_page_costs(waiting, waiting[2][APPROVER], decoded, (13, 33),
                            waiting=len(inbox(waiting[0])))
    # before: 23 and 63 rows (every skipped item built)
    assert costs[0] == costs[1] <= 4, costs


def test_pages_across_kinds_still_add_up_in_order(waiting: Served) -> None:
    rt = waiting[0]
    whole = inbox(rt)
    for size in (1, 2, 3, 5, 6):
        pages = [inbox(rt, limit=size, offset=o) for o in range(0, len(whole), size)]
        assert [i.id for p in pages for i in p] == [i.id for i in whole], size
    assert [i.id for i in inbox(rt, limit=4, offset=3)] == [i.id for i in whole[3:7]]
    assert [i.id for i in inbox(rt, run_id="run:esc", limit=2, offset=1)] == [
        i.id for i in whole if i.run_id == "run:esc"][1:3]
