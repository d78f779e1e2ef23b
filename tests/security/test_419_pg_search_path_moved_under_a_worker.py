"""Attack review (many workers, an operator's mistake): a schema made, while a worker runs,
earlier on its journal URL's ``search_path``.

Finding: a PostgreSQL journal is the schema its URL's ``search_path`` resolves to (its
first schema that exists: PostgreSQL's default path is ``"$user", public``). A worker
resolved every name again at each statement, so a schema created later *earlier* on that
path — another home's journal migrated into a schema named after the role, or anyone with
``CREATE`` on the database making it — took over a worker already running: its next
append went into that schema's ``events`` (its check of what it pinned passed: the pinned
tables were unchanged, only no longer the ones its statements named), an idempotency key
the worker had claimed in its own journal was claimed again there (the tool run twice),
and its head, guards and limits were read from the other journal.

Now: a journal fixes its session's ``search_path`` to the schema it opened (``pg_catalog``
first, then that schema, ``pg_temp`` last), so a running worker's statements, its
``cradle_append`` and the guards it runs keep naming the journal it opened, whatever is
created on the URL's path afterwards.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from cradle_kg.storage import IdempotencyKeyTaken, UsageCap, open_journal
from cradle_kg.storage.pg_admin import migrate
from cradle_kg.storage.pg_scratch import ScratchPostgres
from tests.storage.test_pg_append import T0, ev

#: the two ways an append is written: one round trip (the server's function), two (an
#: intent under a cap)
TRIPS = {"one trip": (), "two trips": (UsageCap(scope="*", subject="", since=T0,
                                                  max_calls=100),)}


def _schema_url(base: str, *path: str) -> str:
    return f"{base}?options=-csearch_path%3D{'%2C'.join(path)}"


def _keys(base: str, schema: str) -> list[str]:
    with psycopg.connect(base) as conn:
        return [str(r[0]) for r in conn.execute(
            f'SELECT idem_key FROM "{schema}".events ORDER BY seq')]


@pytest.mark.parametrize("trip", sorted(TRIPS))
def test_a_schema_made_earlier_on_the_path_does_not_take_a_worker_over(
        postgres: ScratchPostgres, trip: str) -> None:
    caps = TRIPS[trip]
    base = postgres.url()
    mine, other = (f"j_{uuid.uuid4().hex[:12]}" for _ in range(2))
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{mine}"')
    migrate(_schema_url(base, mine))
    # the worker's URL names a schema that does not exist yet, then its journal's
    with open_journal(_schema_url(base, other, mine)) as worker:
        worker.append([ev(1, "action.intent", key="idem:a", caps=caps)])
        # another home's journal is made in the schema first on the worker's path
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{other}"')
        migrate(_schema_url(base, other))
        with pytest.raises(IdempotencyKeyTaken):  # claimed in the worker's own journal
            worker.append([ev(2, "action.intent", key="idem:a", caps=caps)])
        worker.append([ev(3, "action.intent", key="idem:b", caps=caps)])
        assert worker.head()[0] == 2
        assert worker.verify().intact
    assert _keys(base, mine) == ["idem:a", "idem:b"]
    assert _keys(base, other) == []
