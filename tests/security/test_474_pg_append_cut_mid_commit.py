"""Attack review (many workers, the network's doing): a worker's journal session lost while
an append's transaction is open — its COMMIT sent, its answer never read.

Finding: the append raised a plain journal error ("cannot write the journal …") whatever
had become of its transaction. Terminated while it waited for the append lock, the
transaction was rolled back — and the worker could not append again (``test_472``). Cut off
by the network instead, the server's session lived on with its transaction: once the lock
was free it committed, and the worker had been told its append failed — an intent in the
journal its worker took for unwritten (a caller that tries again writes its effect's intent
twice); and an append whose COMMIT was carried out while its answer was lost was
reported failed as well.

Now: an append whose session was lost is never sent again blindly. On a new session the
old one is ended first (``pg_terminate_backend`` of its backend, found by pid and start,
then waited for), so its transaction has committed or never will; its events are read back
by everything they were hashed from: found, the append returns them (its durable flush made
on the new session); absent, it is appended on the new session; neither known, a
``JournalOutcomeUnknown`` (never a second copy, never a loss).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from cradle_kg.errors import JournalOutcomeUnknown
from cradle_kg.storage import UsageCap, open_journal, postgresql
from cradle_kg.storage.pg_connect import APPEND_LOCK
from tests.security.test_472_pg_journal_session_ended_alone import backend, terminate
from tests.storage.test_pg_append import T0, ev


class Cut:
    """A TCP relay between the journal and its server: each connection a pair of pumps.
    ``swallow(n)``: the server's answers on connection ``n`` are no longer relayed (read
    and dropped: the server's session goes on); ``cut(n)``: its client side is closed, as a
    network cut shows it to the client (the server's side is left open)."""

    def __init__(self, port: int) -> None:
        self._listen = socket.create_server(("127.0.0.1", 0))
        self.port = self._listen.getsockname()[1]
        self._upstream = port
        self.clients: list[socket.socket] = []
        self._swallowed: set[int] = set()
        self._all: list[socket.socket] = [self._listen]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listen.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self._upstream))
            n = len(self.clients)
            self.clients.append(client)
            self._all += [client, server]
            threading.Thread(target=self._pump, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, n), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, n: int | None) -> None:
        try:
            while data := src.recv(65536):
                if n is None or n not in self._swallowed:
                    dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)  # an end on one side is shown on the other
        except OSError:
            pass

    def swallow(self, n: int) -> None:
        self._swallowed.add(n)

    def cut(self, n: int) -> None:
        self.clients[n].shutdown(socket.SHUT_RDWR)
        self.clients[n].close()

    def close(self) -> None:
        for s in self._all:
            s.close()


@pytest.fixture
def relayed(pg_url: str) -> Iterator[tuple[Cut, str]]:
    port = int(pg_url.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
    relay = Cut(port)
    try:
        yield relay, pg_url.replace(f":{port}/", f":{relay.port}/")
    finally:
        relay.close()


def _waits_for_the_lock(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        while admin.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                            (pid,)).fetchone() != ("Lock",):
            time.sleep(0.01)


def _append_in_thread(j: Any, events: list[Any]) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["written"] = j.append(events)
        except Exception as exc:  # what the append answered: the test reads it
            result["raised"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def _seqs(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return [(int(s), str(k)) for s, k in conn.execute(
            "SELECT seq, subject FROM events ORDER BY seq")]


@pytest.mark.parametrize("trips", ["one trip", "two trips"])
@pytest.mark.parametrize("ended", ["terminated", "cut"])
def test_an_append_lost_before_its_commit_is_written_once(
        pg_url: str, relayed: tuple[Cut, str], ended: str, trips: str) -> None:
    """The append waits for the lock (held by another session) when its session goes:
    terminated (its transaction rolled back) or cut off (its transaction still open on the
    server, about to commit once the lock is free). An append with a usage cap takes the
    two round trips (the cap read under the lock), the others one."""
    relay, url = relayed
    caps = () if trips == "one trip" else (
        UsageCap(scope="*", subject="", since=T0, max_calls=100),)
    with open_journal(url) as j, psycopg.connect(pg_url, autocommit=True) as other:
        j.append([ev(1)])
        pid = backend(j)
        other.execute("SELECT pg_advisory_lock(%s, 0)", (APPEND_LOCK,))
        thread, result = _append_in_thread(j, [ev(2, key="intent:k2", caps=caps), ev(3)])
        _waits_for_the_lock(pg_url, pid)
        if ended == "terminated":
            terminate(pg_url, pid)
        else:
            relay.cut(0)
        time.sleep(0.3)  # the worker finds its session lost
        other.execute("SELECT pg_advisory_unlock(%s, 0)", (APPEND_LOCK,))
        thread.join(30)
        assert not thread.is_alive()
        assert "raised" not in result, result
        assert [e.seq for e in result["written"]] == [2, 3]
        assert _seqs(pg_url) == [(1, "s:1"), (2, "s:2"), (3, "s:3")]
        assert j.verify().intact


def test_an_append_whose_commit_was_carried_out_unanswered_returns_its_events(
        pg_url: str, relayed: tuple[Cut, str]) -> None:
    """The server commits the append, and its answer is lost with the connection: the
    worker is answered with the events it wrote, not told it failed."""
    relay, url = relayed
    with open_journal(url) as j, psycopg.connect(pg_url, autocommit=True) as other:
        j.append([ev(1)])
        pid = backend(j)
        other.execute("SELECT pg_advisory_lock(%s, 0)", (APPEND_LOCK,))
        thread, result = _append_in_thread(j, [ev(2, key="intent:k2"), ev(3)])
        _waits_for_the_lock(pg_url, pid)
        relay.swallow(0)
        other.execute("SELECT pg_advisory_unlock(%s, 0)", (APPEND_LOCK,))
        while other.execute("SELECT seq FROM head").fetchone() != (3,):
            time.sleep(0.01)  # committed; its answer never reaches the worker
        relay.cut(0)
        thread.join(30)
        assert not thread.is_alive()
        assert "raised" not in result, result
        assert [(e.seq, e.subject) for e in result["written"]] == [(2, "s:2"), (3, "s:3")]
        assert _seqs(pg_url) == [(1, "s:1"), (2, "s:2"), (3, "s:3")]
        assert j.append([ev(4)])[0].seq == 4
        assert j.verify().intact


def test_an_append_whose_outcome_cannot_be_read_back_says_so(
        pg_url: str, relayed: tuple[Cut, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The session is cut mid-append and the server cannot be reached to read the outcome
    back: a typed ``JournalOutcomeUnknown``, not an error a caller takes for "not written"
    (and not a second copy sent)."""
    relay, url = relayed
    with open_journal(url) as j, psycopg.connect(pg_url, autocommit=True) as other:
        j.append([ev(1)])
        pid = backend(j)
        other.execute("SELECT pg_advisory_lock(%s, 0)", (APPEND_LOCK,))
        monkeypatch.setattr(postgresql, "RECONNECT_ATTEMPTS", 1)
        real = postgresql.connect
        monkeypatch.setattr(postgresql, "connect", lambda _url, **kw: real(
            url.replace(f":{relay.port}/", ":1/"), **kw))
        thread, result = _append_in_thread(j, [ev(2, key="intent:k2")])
        _waits_for_the_lock(pg_url, pid)
        relay.swallow(0)
        other.execute("SELECT pg_advisory_unlock(%s, 0)", (APPEND_LOCK,))
        while other.execute("SELECT seq FROM head").fetchone() != (2,):
            time.sleep(0.01)
        relay.cut(0)
        thread.join(30)
        assert isinstance(result.get("raised"), JournalOutcomeUnknown), result
        assert "whether it was written is not known" in result["raised"].message
        monkeypatch.setattr(postgresql, "connect", real)
        assert j.head()[0] == 2 and _seqs(pg_url) == [(1, "s:1"), (2, "s:2")]


def test_an_append_whose_flush_lost_its_session_is_flushed_on_the_next(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A durable append committed without a flush under the lock (where a flush waits for
    the disk) then flushes apart: its session lost during that flush, the append is read
    back (committed), flushed on the new session, and answered — not sent again, and not a
    journal error."""
    real = postgresql.PostgresJournal._flush
    ended: list[int] = []

    def lost_once(self: Any, seq: int, psycopg_: Any) -> None:
        if not ended:
            ended.append(backend(self))
            terminate(pg_url, ended[0])
        real(self, seq, psycopg_)

    with open_journal(pg_url) as j:
        j._flush_apart = True  # type: ignore[attr-defined]  # the tests' server: fsync off
        j.append([ev(1)])
        monkeypatch.setattr(postgresql.PostgresJournal, "_flush", lost_once)
        assert [e.seq for e in j.append([ev(2, key="intent:k2"), ev(3)])] == [2, 3]
        assert ended and backend(j) != ended[0]
        assert _seqs(pg_url) == [(1, "s:1"), (2, "s:2"), (3, "s:3")]
        assert j.verify().intact
