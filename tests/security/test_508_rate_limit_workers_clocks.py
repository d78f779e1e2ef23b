"""Finding: the events of a PostgreSQL journal were dated by each worker's own clock, and a
rate or cost limit's window was read from the usage buckets of those dates. Two workers
on one journal, one on a host whose clock was an hour behind (or ahead): the agent sending
its calls to both made four calls under a limit of three in one minute. Behind, the
worker's calls were counted in seconds the other's window no longer looked at; ahead, its
window started after the other's calls. Each worker's check (gate 1's count, the cap under
the append lock) held against what it saw.

Now: a runtime on a PostgreSQL journal, its clock not given by its host's code, reads the
time of the journal's server — measured when it opens (``clock_timestamp()``, half the
round trip added), carried on by the process's monotonic clock, measured again every few
minutes (``storage.ServerClock``). Every worker dates its events by one clock, so every
window reads the same seconds; the usage buckets stay a function of the events.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.config import Limit
from cradle_kg.loop import runtime as runtime_module
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
    with Runtime(home, config=cfg, graph_sync=False) as right:
        # the second worker's host: its clock an hour off
        monkeypatch.setattr(runtime_module, "_utcnow",
                            lambda: datetime.now(UTC) + timedelta(hours=skew))
        with Runtime(home, config=cfg, graph_sync=False) as off:
            # within a minute, the agent's four calls: to the worker whose clock is behind
            # first (its calls then look old), to the one ahead last (its window then
            # starts after the other's calls)
            first, then = (off, right) if skew < 0 else (right, off)
            statuses = [_credit(first, 1), _credit(first, 2), _credit(then, 3),
                        _credit(then, 4)]
    # three calls (cost 3) in the minute: the fourth is over the limit
    assert statuses == [OutcomeStatus.EXECUTED] * 3 + [OutcomeStatus.DENIED], statuses
    with open_home_journal(home) as journal:
        assert len(journal.events_of_kind("action.intent")) == 3
        assert journal.verify().intact


def test_a_clock_given_by_the_host_is_kept(home: Path, pg_url: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock the host's code gives (a test's, a replay's) is the runtime's, as before."""
    monkeypatch.setenv(JOURNAL_URL_ENV, pg_url)
    fixed = datetime(2024, 5, 15, 12, tzinfo=UTC)
    with Runtime(home, config=make_config(), clock=lambda: fixed, graph_sync=False) as rt:
        assert rt.clock() == fixed
        assert _credit(rt, 1) is OutcomeStatus.EXECUTED
    with open_home_journal(home) as journal:
        assert journal.events_of_kind("action.intent")[0].at == fixed


def test_the_server_out_of_reach_keeps_the_last_measurement(
        home: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured again past ``REFRESH``: a server that does not answer then leaves the last
    measurement carried on: no error out of the clock."""
    from cradle_kg.errors import JournalError
    from cradle_kg.storage.server_clock import ServerClock

    monkeypatch.setenv(JOURNAL_URL_ENV, pg_url)
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        assert isinstance(rt.clock, ServerClock)
        before = rt.clock()
        monkeypatch.setattr(ServerClock, "REFRESH", 0.0)

        def out_of_reach() -> datetime:
            raise JournalError("the server is out of reach")

        monkeypatch.setattr(rt.journal, "server_time", out_of_reach)
        assert rt.clock() >= before
