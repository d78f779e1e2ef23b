"""What the runs page and the run view read does not grow with the length of a run.

Finding: the runs page (``/api/runs``, ``cradle-kg runs list``) and the run view
(``/api/runs/{id}``, ``/api/runs/{id}/view``, ``cradle-kg runs show``) built each run's
summary by decoding *every* event of the run, and the run view returned every event of the
run, unpaginated. The page polls both every few seconds, and an agent decides how long its
run is (an MCP session is one run; it can submit thousands of proposals). Measured on this
machine: a page of runs (limit 100) decoded 106 rows with one 64-event run and 372 with
one 302-event run; ``show_run`` 78 and 316.

Now a run's summary is read, not folded (:func:`cradle_kg.runs.read_summary`): its derived
``run_state`` row, its first and newest event, its counts (``COUNT`` by the database,
nothing decoded), its newest 20 proposals received and outcomes, its open human tasks and
waiting steps — the same rows whatever the run's length. The events of one run come a page
at a time (``limit``, default 200, at most 1000; ``after_seq``; ``events_total``, ``more``,
``next_after_seq``). Counted as the event rows the journal decodes (not time: the machine
is shared), on both journals. Here: a page of four runs, one of them growing, decoded
92, 330 and 624 rows at 64, 302 and 600 events before, 34, 54 and 54 now (54 once the run
has more than 20 proposals); ``show_run`` 64 and 302 before, 84 and 242 now (the first
page of 200 events and the summary), 62 and 62 with ``limit=20`` at 310 and 400 events.
All of these assertions fail on the code before.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError
from cradle_kg.records import OutcomeStatus
from cradle_kg.runs import (
    EVENTS_PAGE,
    SUMMARY_ITEMS,
    folded_summary,
    list_page,
    more,
    read_summary,
    show_run,
)
from tests import oneshot
from tests.conftest import make_config, proposal

from ..server.conftest import start_server, stop_server

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

LONG = "run:long"


def _grow(rt: Runtime, upto: int) -> int:
    """Balance reads in one run (``task_id`` long) until it has ``upto`` events (7 each)."""
    while (n := rt.journal.run_counts(LONG)[0]) < upto:
        seq = rt.journal.head()[0]  # a new attempt each: executed, not replayed
        out = rt.submit(proposal(f"p-{seq}", "demo.ledger.balance", {"account": "a1"},
                                 task_id="long", attempt=seq))
        assert out.status is OutcomeStatus.EXECUTED
    return n


def _short_runs(rt: Runtime) -> None:
    for i in range(3):
        rt.submit(proposal(f"s-{i}", "demo.ledger.balance", {"account": "a1"},
                           task_id=f"short-{i}"))


def test_the_runs_page_reads_the_same_whatever_a_run_s_length(
        home: Path, decoded: Callable[[], int]) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        _short_runs(rt)
        rows = []
        for upto in (64, 302, 600):
            _grow(rt, upto)
            before = decoded()
            page, total = list_page(rt.journal, limit=100, newest_first=True)
            rows.append(decoded() - before)
            assert total == 4 and page[0].run_id == LONG
        # before: every event of every run listed (92, 330, 624 rows); now 34, 54, 54
        assert rows[0] <= rows[1] == rows[2] <= 4 + 3 * SUMMARY_ITEMS, rows
        long = page[0]
        assert long.events >= 600 and long.proposal_count > SUMMARY_ITEMS
        assert len(long.proposals) == SUMMARY_ITEMS and len(long.outcomes) == SUMMARY_ITEMS


def test_the_run_view_reads_one_page_of_events(
        home: Path, decoded: Callable[[], int]) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        rows = []
        for upto in (64, 302):
            _grow(rt, upto)
            before = decoded()
            summary, events = show_run(rt.journal, LONG)
            rows.append(decoded() - before)
        # before: every event of the run (64 and 302 rows); now the first page of 200 and
        # the summary (84 and 242)
        assert rows[1] <= EVENTS_PAGE + 3 * SUMMARY_ITEMS, rows
        assert len(events) == EVENTS_PAGE and more(summary, events)
        small = []
        for upto in (310, 400):
            _grow(rt, upto)
            before = decoded()
            show_run(rt.journal, LONG, limit=20)
            small.append(decoded() - before)
        assert small[0] == small[1] <= 20 + 3 * SUMMARY_ITEMS, small


def test_the_pages_and_the_summary_say_what_the_whole_run_says(home: Path) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        _short_runs(rt)
        # a short run: the summary read is the folded one, field for field
        for run_id in ("run:short-0", "run:short-2"):
            read = read_summary(rt.journal, run_id)
            assert read == folded_summary(run_id, rt.journal.events(run_id=run_id))
        _grow(rt, 150)
        whole = list(rt.journal.events(run_id=LONG))
        folded = folded_summary(LONG, whole)
        read = read_summary(rt.journal, LONG)
        assert (read.key, read.state, read.status, read.why(), read.events, read.last_seq,
                read.started_at, read.updated_at, read.proposal_count, read.outcome_count) == (
            folded.key, folded.state, folded.status, folded.why(), folded.events,
            folded.last_seq, folded.started_at, folded.updated_at, folded.proposal_count,
            folded.outcome_count)
        # the newest proposals and their outcomes
        assert read.proposals == folded.proposals[-SUMMARY_ITEMS:]
        assert read.outcomes == {p: folded.outcomes[p] for p in read.proposals}
        # the pages, one after the other, are the run's events
        seen, after = [], 0
        while True:
            summary, page = show_run(rt.journal, LONG, limit=40, after_seq=after)
            seen.extend(page)
            if not more(summary, page):
                break
            after = page[-1].seq
        assert [e.seq for e in seen] == [e.seq for e in whole]
        for bad in ({"limit": 0}, {"limit": 1001}, {"after_seq": -1}):
            with pytest.raises(InputError):
                show_run(rt.journal, LONG, **bad)


def test_the_api_pages_a_run_s_events(tmp_path: Path, home: Path) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        _grow(rt, 200)
        total = rt.journal.run_counts(LONG)[0]
    log = tmp_path / "server.log"
    srv = start_server(["--home", str(home)], log, home)
    headers = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
    try:
        url = f"{srv.url}/api/runs/{LONG}"
        first = oneshot.get(url, params={"limit": 25}, headers=headers, timeout=60).json()
        assert len(first["events"]) == 25 and first["more"] is True
        assert first["events_total"] == total and first["limit"] == 25
        assert first["next_after_seq"] == first["events"][-1]["seq"]
        rest = oneshot.get(url, params={"after_seq": first["next_after_seq"]},
                         headers=headers, timeout=60).json()
        assert len(rest["events"]) == total - 25 and rest["more"] is False
        assert rest["next_after_seq"] is None
        assert oneshot.get(url, headers=headers, timeout=60).json()["limit"] == EVENTS_PAGE
        assert oneshot.get(url, params={"limit": 1001}, headers=headers,
                         timeout=60).status_code == 422
        view = oneshot.get(url + "/view", params={"limit": 25}, headers=headers,
                         timeout=60).json()
        assert view["more"] is True and view["events_total"] == total and view["lanes"]
        runs = oneshot.get(f"{srv.url}/api/runs", headers=headers, timeout=60).json()
        assert runs[0]["run_id"] == LONG and runs[0]["proposal_count"] > SUMMARY_ITEMS
        assert len(runs[0]["proposals"]) == SUMMARY_ITEMS
    finally:
        stop_server(srv)
    assert "Traceback" not in log.read_text(errors="replace")
