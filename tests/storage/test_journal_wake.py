"""``Journal.wait_for_change`` on both journals (PostgreSQL: ``LISTEN``/``NOTIFY``; SQLite:
``data_version`` read every 20 ms), and the projector it wakes: an append by another
connection ends the wait at once, not at its timeout — the timeouts here are 30 s, so a
wait that only timed out would take 30 s; the assertions ask for less than half of it."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

from cradle_kg.graph.follow import FollowStatus, follow
from cradle_kg.storage import Journal, NewEvent, open_journal
from cradle_kg.storage.oxigraph import OxigraphStore
from cradle_kg.storage.postgresql import change_channel

LONG = 30.0  # a wait's timeout, and the follower's --interval: far beyond a wake-up
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def note(i: int) -> NewEvent:
    return NewEvent(run_id="run:wake", kind="note", subject=f"s:{i}", actor="agent:a",
                    at=T0, payload={"i": i})


def append_later(target: str, delay: float, count: int = 1) -> threading.Thread:
    """Append ``count`` events from another connection after ``delay`` seconds."""
    def run() -> None:
        time.sleep(delay)
        with open_journal(target) as writer:
            for i in range(count):
                writer.append([note(i)])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_an_append_by_another_connection_ends_the_wait(target: str) -> None:
    with open_journal(target) as waiter:
        assert waiter.wait_for_change(0) is False  # the first call starts watching
        writer = append_later(target, 0.3)
        started = time.monotonic()
        assert waiter.wait_for_change(LONG) is True
        assert time.monotonic() - started < LONG / 2
        writer.join(10)
        assert waiter.head()[0] == 1


def test_a_quiet_journal_times_out(journal: Journal) -> None:
    journal.wait_for_change(0)
    assert journal.wait_for_change(0.2) is False


def test_an_append_between_two_waits_is_reported_by_the_next(target: str) -> None:
    with open_journal(target) as waiter, open_journal(target) as writer:
        waiter.wait_for_change(0)
        writer.append([note(1)])
        writer.append([note(2)])
        started = time.monotonic()
        assert waiter.wait_for_change(LONG) is True  # it came before the call
        assert time.monotonic() - started < LONG / 2
        # nothing more was appended: the wake-ups end (the second append's notification
        # may reach the listener after the first wake-up, so one spurious wake is allowed)
        assert not all(waiter.wait_for_change(0.2) for _ in range(2))


def test_postgres_journals_in_two_schemas_do_not_wake_each_other(pg_url: str,
                                                                 postgres: object) -> None:
    other = postgres.journal_schema()  # type: ignore[attr-defined]
    with open_journal(pg_url) as waiter, open_journal(other) as writer:
        waiter.wait_for_change(0)
        writer.append([note(1)])
        assert waiter.wait_for_change(0.5) is False
        with open_journal(pg_url) as same:
            same.append([note(1)])
        assert waiter.wait_for_change(LONG) is True


def test_channel_names_are_per_schema_and_safe() -> None:
    a, b = change_channel("j_1"), change_channel("j_2")
    assert a != b
    assert a.isidentifier() and len(a) < 63  # a PostgreSQL identifier, quoted or not


def test_the_follower_wakes_on_an_append_not_at_its_interval(target: str) -> None:
    store = OxigraphStore.in_memory()
    seen: list[FollowStatus] = []
    projected = threading.Event()
    stop = threading.Event()

    def report(status: FollowStatus) -> None:
        seen.append(status)
        if status.projected >= 3:
            projected.set()

    with open_journal(target) as journal:
        with open_journal(target) as writer:  # something to project before it starts
            writer.append([note(0)])
        thread = threading.Thread(target=follow, args=(store, journal), daemon=True,
                                  kwargs={"stop": stop, "report": report, "interval": LONG})
        thread.start()
        deadline = time.monotonic() + LONG / 2
        while not seen and time.monotonic() < deadline:  # its first round: caught up
            time.sleep(0.01)
        assert seen and seen[-1].projected == 1
        started = time.monotonic()
        writer_thread = append_later(target, 0.2, count=2)
        assert projected.wait(LONG / 2), [s.to_dict() for s in seen]
        assert time.monotonic() - started < LONG / 2
        writer_thread.join(10)
        stop.set()
        thread.join(LONG / 2)
        assert not thread.is_alive()  # a stop request ends the wait within its slice
    assert store.projected_seq() == 3
