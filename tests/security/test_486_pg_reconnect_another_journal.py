"""A worker's PostgreSQL journal reconnects only to the journal it opened.

Finding: **a reconnect (``PostgresJournal._reconnect``, ``tests/security/test_472``)
checked that the new session's schema was migrated and unaltered, not that it held the
same journal.** The journal at the worker's URL replaced while its session was lost — the
schema renamed away and a new journal made in its place (a restore into a new database
behind the same name, a failover to the wrong cluster, an operator's re-initialisation) —
and the worker's next append was chained onto the *other* journal's head, answered as
written: the worker's run went on in a journal that holds none of its earlier events, the
digest key it cached belonging to the first one.

Now: the journal remembers its first event's hash (read at open, or taken from its own
first append) and its digest key once read; a new session whose journal's first event
(or, when known, digest key) is another's is refused — a ``JournalError`` ("is not the
journal this worker opened"), nothing written there, and every later operation refused
the same way until the worker is restarted. A server that came back with the same journal
is reconnected to as before.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from cradle_kg.errors import JournalError
from cradle_kg.storage import open_journal
from cradle_kg.storage.pg_admin import migrate
from tests.security.test_472_pg_journal_session_ended_alone import backend, terminate
from tests.storage.test_pg_append import ev


def _replace_journal(url: str, schema: str, *, events: int) -> None:
    """Move the journal in ``schema`` away and make a new one in its place."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
            sql.Identifier(schema), sql.Identifier(schema + "_moved")))
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    migrate(url)
    if events:
        with open_journal(url) as other:
            other.append([ev(100 + i) for i in range(events)])


@pytest.mark.parametrize("events", [0, 1], ids=["empty", "with-events"])
def test_a_reconnect_to_another_journal_writes_nothing(pg_url: str, events: int) -> None:
    with open_journal(pg_url) as j:
        j.append([ev(1), ev(2)])
        schema = j._schema  # type: ignore[attr-defined]
        assert schema is not None
        _replace_journal(pg_url, schema, events=events)
        terminate(pg_url, backend(j))
        with pytest.raises(JournalError) as raised:
            j.append([ev(3)])
        assert "not the journal this worker opened" in raised.value.message
        with pytest.raises(JournalError):
            j.head()  # refused for good
    with open_journal(pg_url) as other:
        assert [e.payload["i"] for e in other.events()] == [100 + i for i in range(events)]


def test_a_journal_opened_empty_knows_its_first_append(pg_url: str) -> None:
    with open_journal(pg_url) as j:
        j.append([ev(1)])  # the journal's first event: its identity from now on
        schema = j._schema  # type: ignore[attr-defined]
        _replace_journal(pg_url, schema, events=1)
        terminate(pg_url, backend(j))
        with pytest.raises(JournalError) as raised:
            j.head()
        assert "not the journal this worker opened" in raised.value.message


def test_the_same_journal_is_reconnected_to(pg_url: str) -> None:
    with open_journal(pg_url) as j:
        j.append([ev(1)])
        j.digest_key()
        terminate(pg_url, backend(j))
        assert [e.seq for e in j.append([ev(2)])] == [2]
        assert j.verify().intact
