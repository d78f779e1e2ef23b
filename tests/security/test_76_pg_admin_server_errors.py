"""``db migrate``, ``db status`` and ``journal copy`` say what the target database refused.

Finding: the three commands take a PostgreSQL URL an operator names — often a database
that already serves something else — and only the connection was guarded: a refusal by
the server once connected left ``pg_admin`` as a driver exception and reached the user as
the crash handler's ``error: unexpected UndefinedColumn: column "name" does not exist …``
(a Rails-style ``schema_migrations(version)`` table: ``db status``, ``db migrate`` and
``journal copy`` all three), ``unexpected DuplicateTable: relation "events" already
exists`` (another application's ``events``), ``unexpected UndefinedTable`` (a migrated
journal whose ``head`` was dropped: ``db status``), ``unexpected InvalidSchemaName`` (a
``search_path`` naming no schema) — no journal named, no migration named, nothing saying
what to do; the journal's own commands (``runs list`` …) already said ``cannot read the
journal `URL`: …`` for the same databases.

Now each is one typed ``error:`` line naming the journal (its password redacted) and,
for ``db migrate``, the migration the server refused, with a hint (an empty database, or
one cradle-kg migrated), exit 2. What the refused migration began is rolled back with it
(each migration is its own transaction, as before): the other application's tables are
as they were, and no table of the journal's is left in that database.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cradle_kg.storage.pg_admin import migrate
from cradle_kg.storage.pg_scratch import ScratchPostgres
from tests.inprocess import run_cli

from .homes import opened_demo_home

Setup = Callable[[psycopg.Connection[Any]], object]
SECRET = "s3cret-pw"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home whose journal is its SQLite file (the source of ``journal copy``)."""
    return opened_demo_home(tmp_path_factory, "pgadmin", embedded=True)


def _database(postgres: ScratchPostgres, setup: Setup) -> str:
    """A schema of its own, prepared by ``setup``; its URL with a password in it (the
    scratch server trusts every local login, so the password is only there to be hidden)."""
    url = postgres.create_schema().replace("cradle@", f"cradle:{SECRET}@")
    with psycopg.connect(url, autocommit=True) as conn:
        setup(conn)
    return url


def _tables(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() ORDER BY table_name")]
        return {n: sorted(conn.execute(f'SELECT * FROM "{n}"').fetchall()) for n in names}


def _refused(args: list[str], url: str, *, code: int = 2) -> str:
    done = run_cli(*args)
    assert done.returncode == code, done
    assert done.stderr.startswith("error: cannot "), done.stderr
    assert "unexpected" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert url.split("?", 1)[1] in done.stderr  # the journal is named
    assert "hint: " in done.stderr
    return done.stderr


def _rails(conn: psycopg.Connection[Any]) -> None:
    conn.execute("CREATE TABLE schema_migrations (version varchar PRIMARY KEY)")
    conn.execute("INSERT INTO schema_migrations VALUES ('20240101123456')")


def _their_events(conn: psycopg.Connection[Any]) -> None:
    conn.execute("CREATE TABLE events (id serial PRIMARY KEY, what text)")
    conn.execute("INSERT INTO events (what) VALUES ('signup')")


def _commands(home: Path, url: str) -> dict[str, list[str]]:
    return {"status": ["db", "status", "--journal", url],
            "migrate": ["db", "migrate", "--journal", url],
            "copy": ["journal", "copy", "--home", str(home), "--to", url]}


@pytest.mark.parametrize("command", ["status", "migrate", "copy"])
def test_another_applications_migrations_table(home: Path, postgres: ScratchPostgres,
                                               command: str) -> None:
    url = _database(postgres, _rails)
    before = _tables(url)
    err = _refused(_commands(home, url)[command], url)
    assert "cannot read the schema of the journal" in err, err
    assert 'column "name" does not exist' in err
    assert _tables(url) == before


@pytest.mark.parametrize("command", ["migrate", "copy"])
def test_another_applications_events_table(home: Path, postgres: ScratchPostgres,
                                           command: str) -> None:
    url = _database(postgres, _their_events)
    before = _tables(url)
    err = _refused(_commands(home, url)[command], url)
    assert "cannot apply migration 1 (events-head-and-derived-state)" in err, err
    assert 'relation "events" already exists' in err
    assert _tables(url) == before  # no schema_migrations, no head: all rolled back


def test_a_journal_without_its_head_table(postgres: ScratchPostgres) -> None:
    url = _database(postgres, lambda conn: None)
    migrate(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE head")
    err = _refused(["db", "status", "--journal", url], url)
    assert 'relation "head" does not exist' in err, err


@pytest.mark.parametrize("command", ["migrate", "copy"])
def test_a_search_path_naming_no_schema(home: Path, postgres: ScratchPostgres,
                                        command: str) -> None:
    url = postgres.url().replace("cradle@", f"cradle:{SECRET}@") \
        + "?options=-csearch_path%3Dno_such_schema"
    err = _refused(_commands(home, url)[command], url)
    assert "no schema has been selected to create in" in err, err
