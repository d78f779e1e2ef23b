"""Attack review (many workers, an operator's or the network's doing): a worker's journal
session ended alone — ``pg_terminate_backend`` of its backend, a server restart, a
failover, a network cut — while the worker lives.

Finding: the worker never reconnected. Its next submit ended in a journal error
("cannot write the journal …: terminating connection due to administrator command"), and
so did every read and append after it, until the process was restarted; a long-lived
``cradle-kg serve`` / ``worker`` / ``mcp serve`` did not come back by itself after the
database did.

Now: the next journal operation finds the session lost (its socket reads, or a statement
fails on a broken connection) and opens a new one through the same function the journal
opened with (``PostgresJournal._session``: the schema it opened kept, the writer's settings,
the migrations' version, the pinned objects), reads the head again (the cached one is not
trusted), and goes on: the submit executes, once, on an intact chain. A server that stays
away is a ``JournalError`` after bounded attempts, naming the journal without its password.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import demo_ledger
from cradle_kg.errors import JournalError
from cradle_kg.storage import open_journal, postgresql
from tests.conftest import make_config, proposal
from tests.storage.test_pg_append import ev


def terminate(url: str, pid: int) -> None:
    """End backend ``pid`` from a connection of its own, and wait until it is gone."""
    with psycopg.connect(url, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                            (pid,)).fetchone() != (0,):
            time.sleep(0.01)


def backend(journal: object) -> int:
    return int(journal._conn.info.backend_pid)  # type: ignore[attr-defined]


def credit(pid: str, amount: int) -> dict[str, object]:
    return proposal(pid, "demo.ledger.credit", {"account": "acct-1", "amount": amount})


@pytest.mark.parametrize("journal_backend", ["postgresql"], indirect=True)
def test_a_worker_whose_journal_session_was_ended_submits_again(
        home: Path, journal_backend: str, pg_url: str) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        assert rt.submit(credit("p-1", 10)).status.value == "executed"
        terminate(pg_url, backend(rt.journal))
        out = rt.submit(credit("p-2", 20))
        assert out.status.value == "executed", out.reasons
        # the session is the one the journal opened: its schema, its writer's settings
        assert rt.journal._query("SHOW default_transaction_isolation") == [  # type: ignore[attr-defined]
            ("read committed",)]
        assert rt.journal._query("SELECT current_setting('search_path')")[0][0].endswith(  # type: ignore[attr-defined]
            ", pg_temp")
        intents = rt.journal.events_of_kind("action.intent")
        assert len(intents) == 2 and len({e.payload["action"]["id"] for e in intents}) == 2
        assert rt.journal.verify().intact
        assert rt.journal.dangling_intents() == []
    assert set(Counter(k for k, _ in demo_ledger(home).applied_calls()).values()) == {1}


def test_reads_and_appends_after_the_session_ended(pg_url: str) -> None:
    with open_journal(pg_url) as j:
        j.append([ev(1)])
        terminate(pg_url, backend(j))
        assert j.head()[0] == 1  # a read: on a new session
        terminate(pg_url, backend(j))
        assert [e.seq for e in j.append([ev(2), ev(3)])] == [2, 3]  # an append
        terminate(pg_url, backend(j))
        assert j.worker_alive("w-0123456789abcdef") is False
        assert j.head()[0] == 3 and j.verify().intact


def test_a_server_that_stays_away_is_a_journal_error_without_the_password(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg_url + "&password=s3cret-word"
    with open_journal(url) as j:
        j.append([ev(1)])
        monkeypatch.setattr(postgresql, "RECONNECT_ATTEMPTS", 2)
        monkeypatch.setattr(postgresql, "RECONNECT_BACKOFF", 0.0)
        away = url.replace(url.split("@", 1)[1].split("/", 1)[0], "127.0.0.1:1")
        real = postgresql.connect
        monkeypatch.setattr(postgresql, "connect", lambda _url, **kw: real(away, **kw))
        terminate(pg_url, backend(j))
        with pytest.raises(JournalError) as raised:
            j.head()
        assert "could not reconnect after 2 attempts" in raised.value.message
        assert "s3cret-word" not in str(raised.value) + str(raised.value.hint)
        assert "password=***" in raised.value.message
        monkeypatch.setattr(postgresql, "connect", real)  # the server is back
        assert [e.seq for e in j.append([ev(2)])] == [2]


def test_a_server_restart(tmp_path: Path) -> None:
    """The server restarts (an immediate stop: its crash recovery) under an open journal,
    on a server of the test's own: the journal's next append is on a new session."""
    from cradle_kg.storage.pg_admin import migrate
    from cradle_kg.storage.pg_scratch import ScratchPostgres

    server = ScratchPostgres()
    try:
        url = server.create_schema()
        migrate(url)
        with open_journal(url) as j:
            j.append([ev(1)])
            server._run([str(server.bin / "pg_ctl"), "-D", str(server._data), "-m",
                         "immediate", "-w", "-t", "60", "-l", str(server.dir / "server.log"),
                         "restart"], server._env)
            assert [e.seq for e in j.append([ev(2)])] == [2]
            assert j.head()[0] == 2 and j.verify().intact
    finally:
        server.stop()
