"""Administering a PostgreSQL journal: ``db migrate``, ``db status``, ``journal copy``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import JournalError
from . import pg_schema, tasks_sql
from .chain import ChainReport
from .pg_connect import APPEND_LOCK, MIGRATE_LOCK, connect, redact, schema_version, scrub
from .pg_copy import CopyProgress, bulk_copy
from .pg_objects import repairs
from .pg_verify import catalog

if TYPE_CHECKING:
    import psycopg

#: what a database must be for ``db migrate`` / ``journal copy`` to take it
_EMPTY_OR_OURS = "give an empty database (or schema), or one cradle-kg migrated"


@contextmanager
def _server_errors(url: str, what: str) -> Iterator[None]:
    """The server's refusal while doing ``what`` to the journal at ``url`` as one
    :class:`JournalError` naming both (a table of another application under one of the
    journal's names, a schema nobody may create in, a connection lost), never a driver
    exception (``tests/security/test_76``)."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise JournalError(f"cannot {what} `{redact(url)}`: "
                           f"{scrub(' '.join(str(exc).split()), url)}",
                           hint=_EMPTY_OR_OURS) from None


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    applied: list[tuple[int, str]]
    pending: list[tuple[int, str]]
    events: int | None


def status(url: str) -> SchemaStatus:
    with connect(url) as conn, _server_errors(url, "read the schema of the journal"):
        applied = schema_version(conn)
        done = {v for v, _ in applied}
        pending = [(m.version, m.name) for m in pg_schema.MIGRATIONS if m.version not in done]
        events = None
        if applied:
            row = conn.execute("SELECT seq FROM head WHERE one = 1").fetchone()
            events = int(row[0]) if row else 0
        return SchemaStatus(applied, pending, events)


def migrate(url: str) -> list[tuple[int, str]]:
    """Apply the pending migrations, each in its own transaction; what was applied.

    Serialised by an advisory lock: two hosts migrating at once apply each migration once.
    """
    with connect(url) as conn:
        with _server_errors(url, "read the schema of the journal"):
            conn.execute("SELECT pg_advisory_lock(%s, 0)", (MIGRATE_LOCK,))
            done = {v for v, _ in schema_version(conn)}
        newer = sorted(done - {m.version for m in pg_schema.MIGRATIONS})
        if newer:
            raise JournalError(f"the journal `{redact(url)}` has migration `{newer[-1]}`, "
                               "which this cradle-kg does not know", hint="upgrade cradle-kg")
        applied = []
        for m in pg_schema.MIGRATIONS:
            if m.version in done:
                continue
            # one transaction each: a refused migration leaves nothing of itself
            with _server_errors(url, f"apply migration {m.version} ({m.name}) to the "
                                     "journal"), conn.transaction():
                conn.execute(pg_schema.MIGRATIONS_TABLE)
                for statement in m.statements:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations(version, name) VALUES (%s, %s)",
                             (m.version, m.name))
            applied.append((m.version, m.name))
        with _server_errors(url, "complete migration 8 of the journal"):
            completed = _complete_inbox_tables(conn)
        return applied + completed


#: the relation a migration's ``CREATE TABLE`` / ``CREATE INDEX`` makes
_CREATED = re.compile(r"CREATE (?:UNIQUE )?(?:TABLE|INDEX) (\w+)")
#: migration 8, ``inbox-and-repairs``, as this code defines it
_INBOX = next(m for m in pg_schema.MIGRATIONS if m.version == 8)


def _complete_inbox_tables(conn: psycopg.Connection[tuple[Any, ...]]) -> list[tuple[int, str]]:
    """Migration 8 was defined four times under one number: ``human-tasks-and-repairs``
    (``310f1d2``: ``human_tasks``, ``repairs``; ``10b744a``: ``undecided_approvals``), then
    ``inbox-and-repairs`` (``c82dd35``: ``open_steps``; ``870d221``: ``budget_sets``;
    ``5830538``: the index ``approval_ids_seq``). A journal migrated by an earlier one
    lacks the later relations, and no pending migration makes them: every worker refused
    it, ``db migrate`` said it was up to date. Each relation missing is made here and each
    table made derived from the events, under the append lock, and the migration is
    recorded under its name (``tests/security/test_564``); the completion applied, or
    nothing. Called under the migration lock, once migration 8 is recorded."""
    recorded = dict(schema_version(conn))
    if 8 not in recorded:
        return []
    missing = [statement for statement in tasks_sql.POSTGRES_SCHEMA
               if conn.execute("SELECT to_regclass(%s)", (_created(statement),)).fetchone()
               == (None,)]
    if not missing and recorded[8] == _INBOX.name:
        return []
    made = [_created(statement) for statement in missing]
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (APPEND_LOCK,))
        for statement in missing:
            conn.execute(statement)
        for table in tasks_sql.TABLES_8:
            if table in made:
                conn.execute(f"INSERT INTO {table}({tasks_sql.COLUMNS[table]}) "
                             f"{tasks_sql.from_events('postgresql', table)}")
        conn.execute("UPDATE schema_migrations SET name = %s WHERE version = 8",
                     (_INBOX.name,))
    return [(8, f"{_INBOX.name} (completed: {', '.join(made) or 'its name'})")]


def _created(statement: str) -> str:
    found = _CREATED.match(statement)
    assert found is not None, statement  # each of migration 8's schema statements makes one
    return found.group(1)


def restore_functions(url: str) -> list[str]:
    """Install again each function the migrations made that is found altered or dropped
    (their own statements: :func:`.pg_objects.repairs`), in one transaction under the
    migration and append locks; the names restored. A journal opened to write refuses such
    a schema (``tests/security/test_350``); one not at this code's migration is left to
    :func:`migrate`."""
    with connect(url) as conn, _server_errors(url, "restore the functions of the journal"):
        conn.execute("SELECT pg_advisory_lock(%s, 0)", (MIGRATE_LOCK,))
        if schema_version(conn) != [(m.version, m.name) for m in pg_schema.MIGRATIONS]:
            return []
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (APPEND_LOCK,))
            todo = repairs(catalog(conn), pg_schema.STATEMENTS)
            for _name, statements in todo:
                for statement in statements:
                    conn.execute(statement)
        return [name for name, _ in todo]


def copy_sqlite(source: Path, url: str, *,
                progress: CopyProgress | None = None) -> ChainReport:
    """Copy a SQLite journal into an empty, migrated PostgreSQL journal, row for row (same
    seq, ids, texts and hashes), in one transaction verified before it commits
    (:mod:`.pg_copy`). Refuses a broken source and a target that holds events."""
    migrate(url)
    return bulk_copy(source, url, progress=progress)


__all__ = ["SchemaStatus", "copy_sqlite", "migrate", "restore_functions", "status"]
