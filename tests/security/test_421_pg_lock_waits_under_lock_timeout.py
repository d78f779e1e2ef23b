"""Attack review (many workers, an operator's tuning): the journal's own lock waits under a
``lock_timeout`` the database, a role or the URL sets.

Finding: workers wait for each other on purpose — an append for the append lock while
another worker's append holds it, a recovery pass for the pass another worker runs
(``exclusive("recovery")``). A ``lock_timeout`` made the default of the journal's sessions
(``ALTER ROLE … SET lock_timeout = '5s'``, a common guard for an application's row locks)
cut both waits: an append that waited for another worker's failed ("canceling statement
due to lock timeout": a tool's outcome among them), and a worker whose start met another
worker's recovery pass — a pass asks slow tools, it can take longer than that — ended in
psycopg's own ``LockNotAvailable``, not a journal error: no typed error, a traceback.

Now: the journal's writing session and the recovery lock's session wait for the journal's
own locks without a timeout (``lock_timeout = 0`` in those sessions); the recovery lock's
session is not ended for being idle while its pass runs (``idle_session_timeout = 0``, as
a worker's lease), and a server error there is a ``JournalError`` naming the journal.
"""

from __future__ import annotations

import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import psycopg

from cradle_kg.errors import JournalError
from cradle_kg.storage import UsageCap, open_journal
from cradle_kg.storage.pg_connect import APPEND_LOCK, NAMED_LOCKS, int4
from tests.storage.test_pg_append import T0, ev

#: shorter than the other worker holds its lock
_LOCK_TIMEOUT = "50ms"


def _with_timeout(url: str) -> str:
    return f"{url}%20-clock_timeout%3D{_LOCK_TIMEOUT}"


def _waiting(conn: psycopg.Connection[tuple[object, ...]], classid: int) -> None:
    """Until a session waits for an advisory lock of ``classid`` (a state, not a time)."""
    while conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                       "AND classid = %s AND NOT granted", (classid,)).fetchone() != (1,):
        time.sleep(0.01)


def test_an_append_waits_for_another_workers_append(pg_url: str) -> None:
    with open_journal(_with_timeout(pg_url)) as worker, \
            psycopg.connect(pg_url, autocommit=True) as other, \
            psycopg.connect(pg_url, autocommit=True) as watch, ThreadPoolExecutor(2) as pool:
        for i, caps in enumerate(((), (UsageCap("*", "", since=T0, max_calls=9),)), 1):
            other.execute("BEGIN")  # another worker's append, holding the lock a while
            other.execute("SELECT pg_advisory_xact_lock(%s, 0)", (APPEND_LOCK,))
            appended = pool.submit(worker.append, [ev(i, caps=caps)])
            _waiting(watch, APPEND_LOCK)
            time.sleep(0.3)  # longer than the lock_timeout: the wait goes on
            other.execute("COMMIT")
            assert [e.seq for e in appended.result()] == [i]


def test_recovery_waits_for_another_workers_pass(pg_url: str) -> None:
    key = int4(zlib.crc32(b"recovery"))
    with open_journal(_with_timeout(pg_url)) as worker, \
            psycopg.connect(pg_url, autocommit=True) as other, \
            psycopg.connect(pg_url, autocommit=True) as watch, ThreadPoolExecutor(1) as pool:
        other.execute("SELECT pg_advisory_lock(%s, %s)", (NAMED_LOCKS, key))  # its pass

        def recover() -> str:
            with worker.exclusive("recovery"):
                return "passed"

        passed = pool.submit(recover)
        _waiting(watch, NAMED_LOCKS)
        time.sleep(0.3)  # longer than the lock_timeout: the wait goes on
        other.execute("SELECT pg_advisory_unlock(%s, %s)", (NAMED_LOCKS, key))
        assert passed.result() == "passed"


def test_the_recovery_lock_is_a_typed_error_when_the_server_refuses(pg_url: str) -> None:
    """A server error taking the lock (here: its session's statement cancelled) is a
    ``JournalError`` naming the journal, as every other error of the journal."""
    key = int4(zlib.crc32(b"recovery"))
    # long enough for the journal's own open (its catalog reads: 50 ms cancelled one of
    # them in a loaded run of the suite on PostgreSQL), short enough for the lock's wait
    url = f"{pg_url}%20-cstatement_timeout%3D3000ms"
    with open_journal(url) as worker, psycopg.connect(pg_url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", (NAMED_LOCKS, key))
        try:
            worker.exclusive("recovery").__enter__()
        except JournalError as exc:
            assert "journal" in exc.message and "recovery" in exc.message, exc.message
        else:  # pragma: no cover - the statement is cancelled after 3 s
            raise AssertionError("the lock was taken while another session held it")
