"""Attack review (many workers, an operator's tuning): what a database, a role or the URL
makes the default of the journal's sessions.

Finding: the journal relied on two session settings it never set. (1) A write's intent is
durable before its tool is called and its outcome before the answer ("always flushed",
*Durability of a read*); a database, role or URL that sets ``synchronous_commit = off``
(``ALTER DATABASE … SET synchronous_commit = off``, ``options=-csynchronous_commit=off``:
a common throughput tuning) made every commit asynchronous — the journal read the setting,
concluded no flush waits for the disk, and committed each durable append without one: an
acknowledged intent (its tool then called) or outcome could be lost with the server's
power. (2) An append reads the head after the append lock, the last committed head only in
READ COMMITTED: under a default of REPEATABLE READ or SERIALIZABLE a worker that waited
for another's append read the head of before it and failed, "journal integrity error:
duplicate key … events_pkey", on an intact journal (4 workers, 240 appends: 114 failed),
a tool's outcome among them.

Now: a journal opened to write sets its session's ``default_transaction_isolation`` to
READ COMMITTED, and ``synchronous_commit`` to ``on`` when it is ``off`` (a stronger
setting — ``remote_apply`` — is kept; a read's deferred commit still says ``SET LOCAL …
OFF`` in its own transaction). A reader's session is left as it is.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from cradle_kg.storage import UsageCap, open_journal
from cradle_kg.storage.pg_connect import APPEND_LOCK
from tests.storage.test_pg_append import T0, ev


def _with(url: str, setting: str) -> str:
    return f"{url}%20-csynchronous_commit%3D{setting}"


def _setting(journal: object) -> str:
    """The ``synchronous_commit`` of the session that commits the journal's appends."""
    rows = journal._query("SHOW synchronous_commit")  # type: ignore[attr-defined]
    return str(rows[0][0])


def test_a_session_that_commits_asynchronously_is_made_durable(pg_url: str) -> None:
    assert "options=" in pg_url  # the scratch URL's search_path: the setting joins it
    with open_journal(_with(pg_url, "off")) as j:
        assert _setting(j) == "on"
        j.append([ev(1, "action.intent", key="idem:a")])  # durable: committed, flushed
        j.append([ev(2)], flush=False)  # a deferred commit: its own SET LOCAL
        assert _setting(j) == "on"
        assert j.head()[0] == 2


@pytest.mark.parametrize("setting", ["local", "remote_write", "remote_apply"])
def test_a_setting_that_flushes_is_kept(pg_url: str, setting: str) -> None:
    with open_journal(_with(pg_url, setting)) as j:
        assert _setting(j) == setting
        j.append([ev(1)])


def test_a_reader_is_left_as_it_is(pg_url: str) -> None:
    with open_journal(_with(pg_url, "off"), read_only=True) as j:
        assert _setting(j) == "off"


# --- the transaction isolation a database, role or URL sets by default ------------------

def _isolation(url: str, level: str) -> str:
    return f"{url}%20-cdefault_transaction_isolation%3D{level.replace(' ', '%5C%20')}"


def _waiting(conn: psycopg.Connection[tuple[object, ...]], count: int) -> None:
    """Until ``count`` sessions wait for the append lock (a state, not a time)."""
    while conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                       "AND classid = %s AND NOT granted", (APPEND_LOCK,)).fetchone() \
            != (count,):
        time.sleep(0.01)


@pytest.mark.parametrize("level", ["repeatable read", "serializable"])
@pytest.mark.parametrize("trip", ["one trip", "two trips"])
def test_an_append_after_another_workers_is_written_whatever_the_default_isolation(
        pg_url: str, level: str, trip: str) -> None:
    """Finding: the append reads the head after its lock, which is the last committed head
    only in READ COMMITTED. Under a default of REPEATABLE READ or SERIALIZABLE the snapshot
    is the transaction's first statement's, taken before the lock is granted: a worker
    that waited for another's append read the head before it and failed — "journal
    integrity error: duplicate key … events_pkey" on an intact journal (4 workers, 240
    appends: 114 failed), a tool's outcome among them. Now the journal's session reads
    committed, whatever the default."""
    caps = () if trip == "one trip" else (UsageCap(scope="*", subject="", since=T0,
                                                   max_calls=100),)
    with open_journal(pg_url) as first, \
            open_journal(_isolation(pg_url, level)) as second, \
            psycopg.connect(pg_url, autocommit=True) as holder, \
            psycopg.connect(pg_url, autocommit=True) as watch, \
            ThreadPoolExecutor(2) as pool:
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(%s, 0)", (APPEND_LOCK,))
        one = pool.submit(first.append, [ev(1, caps=caps)])
        _waiting(watch, 1)  # the first worker waits first: it is granted the lock first
        two = pool.submit(second.append, [ev(2, caps=caps)])
        _waiting(watch, 2)
        holder.execute("COMMIT")
        assert [e.seq for e in one.result()] == [1]
        assert [e.seq for e in two.result()] == [2]
        assert second.verify().intact


def test_an_idle_worker_keeps_its_journal_session(pg_url: str) -> None:
    """Finding: a worker's journal connection idles between calls — and while a tool runs,
    between its intent and its outcome. An ``idle_session_timeout`` the database, role or
    URL sets (PostgreSQL 14) ended that session under a live worker: every append after it
    failed ("the connection is closed") and the worker never wrote again, its lease (which
    sets the timeout off) still held, so no other worker recovered its intents. Now the
    writing session sets it off too, as the lease's does."""
    with open_journal(f"{pg_url}%20-cidle_session_timeout%3D100ms") as j:
        j.append([ev(1, "action.intent", key="idem:a")])
        time.sleep(0.4)  # a tool's call: longer than the timeout
        j.append([ev(2, "action.observed")])
        assert j.head()[0] == 2
