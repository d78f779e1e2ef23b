"""Finding: a rate or cost limit's window was read from usage buckets keyed by each
intent's own time (``at``), which each worker dates by its host's clock. Two workers on one
PostgreSQL journal, one on a host whose clock was an hour behind (or ahead): the agent
sending its calls to both made four calls (or a cost of four) under a limit of three a
minute. Behind, that worker's intents were counted in seconds the other's window no longer
looked at; ahead, its window started after the other's intents. Each worker's check (gate
1's count, the cap under the append lock) held against what it saw. (The twenty-fifth
round's fix, dating every event by the server's clock, was withdrawn: a verifier's read,
stamped by its host's clock, then predated the action.)

Now: every event keeps its ``at`` (the runtime's clock). On PostgreSQL a counted intent
also goes into usage buckets keyed by the journal server's second (``clock_timestamp()``
in the transaction that appends it, recorded in ``intent_seconds``), and a limit's window
— gate 1's count and the cap checked under the append lock — ends at the server's time
now: the workers' clocks no longer decide which minute a call belongs to. SQLite's file
is one host's: one clock, unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.config import Limit
from cradle_kg.storage import JOURNAL_URL_ENV, open_home_journal
from tests.conftest import make_config, proposal


def _credit(rt: Runtime, amount: int) -> OutcomeStatus:
    """One credit of ``amount`` (its own idempotency key: only the limit can stop it)."""
    return rt.submit(proposal(f"p{amount}", "demo.ledger.credit",
                              {"account": "a", "amount": amount}, task_id="t")).status


@pytest.mark.parametrize("limit", [Limit(scope="task", window_seconds=60, max_calls=3),
                                   Limit(scope="task", window_seconds=60, max_cost=3)],
                         ids=["calls", "cost"])
@pytest.mark.parametrize("skew", [-1, 1], ids=["behind", "ahead"])
def test_workers_with_clocks_apart_count_in_one_window(
        home: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, limit: Limit,
        skew: int) -> None:
    monkeypatch.setenv(JOURNAL_URL_ENV, pg_url)
    cfg = make_config(limits=(limit,))
    with Runtime(home, config=cfg, graph_sync=False) as right, \
            Runtime(home, config=cfg, graph_sync=False,  # its host's clock an hour off
                    clock=lambda: datetime.now(UTC) + timedelta(hours=skew)) as off:
        # within a minute, the agent's four calls: to the worker whose clock is behind
        # first (its calls then look old), to the one ahead last (its window then starts
        # after the other's calls)
        first, then = (off, right) if skew < 0 else (right, off)
        statuses = [_credit(first, 1), _credit(first, 2), _credit(then, 3),
                    _credit(then, 4)]
    # three calls (cost 3) in the minute: the fourth is over the limit
    assert statuses == [OutcomeStatus.EXECUTED] * 3 + [OutcomeStatus.DENIED], statuses
    with open_home_journal(home) as journal:
        intents = journal.events_of_kind("action.intent")
        assert len(intents) == 3
        # every event keeps the time of the runtime that wrote it
        hours = sorted(round((e.at - datetime.now(UTC)).total_seconds() / 3600)
                       for e in intents)
        assert hours == sorted([skew] * (2 if skew < 0 else 1) + [0] * (1 if skew < 0 else 2))
        # the derived state (the server's seconds among it) is derived again the same
        assert journal.verify().intact


def test_the_server_seconds_are_read_again_by_verify(home: Path, pg_url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's seconds are outside the chain, in ``intent_seconds``: ``audit verify``
    derives the server scopes' buckets from them again, so buckets that do not follow from
    them are reported."""
    import psycopg

    monkeypatch.setenv(JOURNAL_URL_ENV, pg_url)
    cfg = make_config(limits=(Limit(scope="task", window_seconds=60, max_calls=3),))
    with Runtime(home, config=cfg, graph_sync=False) as rt:
        assert _credit(rt, 1) is OutcomeStatus.EXECUTED
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM intent_seconds").fetchone() == (1,)
        conn.execute("UPDATE intent_seconds SET second = '2000-01-01T00:00:00'")
    with open_home_journal(home) as journal:
        report = journal.verify()
    assert not report.intact and "usage" in str(report.reason), report.reason
