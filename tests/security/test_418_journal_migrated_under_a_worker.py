"""Attack review (many workers, an operator's rolling upgrade): a journal migrated by a newer
release while a worker of this one still writes to it.

Finding: a journal at a migration (a SQLite format) this code does not know is refused
when it opens ("upgrade cradle-kg": this code does not keep what the newer one derives).
But a worker opened before ``cradle-kg db migrate`` of a newer release ran — one still
serving while the others are upgraded — was never told: its appends went on (on either
PostgreSQL path, and on a SQLite file upgraded in place by a newer release), and the newer
schema's derived table (here one made as migrations 12 to 14 made theirs: from the events,
under the append lock) missed every event it wrote. The newer workers' guards read a
derived table that lies; ``audit verify`` of the newer release reports it broken.

Now: each append checks, under the writer's lock and before it commits, that the journal
is still at the migration (format) this code writes — on PostgreSQL in the prepared check
of what the journal pinned (``cradle_append_check``), on SQLite in the append's ``BEGIN
IMMEDIATE``. A journal migrated past it refuses the append, nothing written: "the journal
`…` was migrated to schema version `N` by a newer cradle-kg …; the append was not written",
hint "upgrade cradle-kg".
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from cradle_kg.errors import JournalError
from cradle_kg.storage import UsageCap, open_journal
from cradle_kg.storage.chain import JOURNAL_FORMAT
from cradle_kg.storage.pg_schema import LATEST
from tests.storage.test_pg_append import T0, ev

#: the two ways a PostgreSQL append is written: one round trip (the server's function),
#: two (an intent under a cap)
TRIPS = {"one trip": (), "two trips": (UsageCap(scope="*", subject="", since=T0,
                                                  max_calls=100),)}

#: a newer release's migration: a derived table of the intents by key, derived from the
#: events under the append lock, as migrations 12 to 14 derive theirs
_NEWER_PG = (
    "BEGIN",
    "SELECT pg_advisory_xact_lock(1129464132, 0)",  # pg_connect.APPEND_LOCK
    "CREATE TABLE intents_by_key (idem_key text PRIMARY KEY, seq bigint NOT NULL)",
    "INSERT INTO intents_by_key SELECT idem_key, seq FROM events "
    "WHERE kind = 'action.intent' AND idem_key IS NOT NULL",
    f"INSERT INTO schema_migrations(version, name) VALUES ({LATEST + 1}, 'intents-by-key')",
    "COMMIT",
)


def _newer_pg(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in _NEWER_PG:
            conn.execute(statement)


@pytest.mark.parametrize("trip", sorted(TRIPS))
def test_a_worker_does_not_write_past_a_newer_migration(pg_url: str, trip: str) -> None:
    caps = TRIPS[trip]
    with open_journal(pg_url) as worker:  # opened before the upgrade
        worker.append([ev(1, "action.intent", key="idem:a", caps=caps)])
        _newer_pg(pg_url)
        head = worker.head()
        with pytest.raises(JournalError) as refused:
            worker.append([ev(2, "action.intent", key="idem:b", caps=caps)])
        message = " ".join(refused.value.message.split())
        assert f"schema version `{LATEST + 1}`" in message, message
        assert "the append was not written" in message, message
        assert "upgrade cradle-kg" in (refused.value.hint or "")
        assert worker.head() == head
    with psycopg.connect(pg_url) as conn:  # what the newer release derived is whole
        keys = [r[0] for r in conn.execute("SELECT idem_key FROM intents_by_key")]
        events = [r[0] for r in conn.execute(
            "SELECT idem_key FROM events WHERE kind = 'action.intent'")]
    assert keys == events == ["idem:a"]


def test_a_newer_migration_is_still_refused_when_a_worker_opens(pg_url: str) -> None:
    _newer_pg(pg_url)
    with pytest.raises(JournalError, match=f"schema version `{LATEST + 1}`"):
        open_journal(pg_url)


@pytest.mark.sqlite_only("a SQLite file upgraded in place by a newer release")
def test_a_runtime_does_not_write_to_a_file_a_newer_release_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    with open_journal(path) as worker:  # opened before the upgrade
        worker.append([ev(1, "action.intent", key="idem:a")])
        newer = sqlite3.connect(path, isolation_level=None)
        try:  # a newer release opens the file and upgrades it in place
            newer.execute("BEGIN IMMEDIATE")
            newer.execute("CREATE TABLE intents_by_key (idem_key TEXT PRIMARY KEY, "
                          "seq INTEGER NOT NULL)")
            newer.execute("INSERT INTO intents_by_key SELECT idem_key, seq FROM events "
                          "WHERE kind = 'action.intent' AND idem_key IS NOT NULL")
            newer.execute(f"PRAGMA user_version = {JOURNAL_FORMAT + 1}")
            newer.execute("COMMIT")
        finally:
            newer.close()
        head = worker.head()
        with pytest.raises(JournalError) as refused:
            worker.append([ev(2, "action.intent", key="idem:b")])
        message = " ".join(refused.value.message.split())
        assert f"format `{JOURNAL_FORMAT + 1}`" in message, message
        assert "the append was not written" in message, message
        assert "upgrade cradle-kg" in (refused.value.hint or "")
        assert worker.head() == head
    check = sqlite3.connect(path)
    try:
        keys = [r[0] for r in check.execute("SELECT idem_key FROM intents_by_key")]
        events = [r[0] for r in check.execute(
            "SELECT idem_key FROM events WHERE kind = 'action.intent'")]
    finally:
        check.close()
    assert keys == events == ["idem:a"]
