"""Administering a PostgreSQL journal: ``db migrate``, ``db status``, ``journal copy``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import JournalError
from . import pg_schema
from .chain import ChainReport
from .pg_connect import APPEND_LOCK, MIGRATE_LOCK, connect, redact, schema_version
from .sqlite import SqliteJournal
from .walk import COLUMNS


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    applied: list[tuple[int, str]]
    pending: list[tuple[int, str]]
    events: int | None


def status(url: str) -> SchemaStatus:
    with connect(url) as conn:
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
            with conn.transaction():
                conn.execute(pg_schema.MIGRATIONS_TABLE)
                for statement in m.statements:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations(version, name) VALUES (%s, %s)",
                             (m.version, m.name))
            applied.append((m.version, m.name))
        return applied


def copy_sqlite(source: Path, url: str) -> ChainReport:
    """Copy a SQLite journal into an empty, migrated PostgreSQL journal, row for row (same
    seq, ids, texts and hashes), in one transaction; then verify the copy and check that
    its head is the source's. Refuses a broken source and a target that holds events."""
    with SqliteJournal(source) as journal:
        before = journal.verify()
        if not before.intact:
            raise JournalError(f"the journal `{source}` is broken ({before.reason}): "
                               "it is not copied")
    migrate(url)
    from .postgresql import PostgresJournal

    with PostgresJournal(url) as target:
        if target.head()[0] != 0:
            raise JournalError(f"the journal `{target.location}` already holds events: "
                               "copy into an empty database")
    with connect(url, autocommit=False) as conn, SqliteJournal(source) as journal:
        rows = journal.raw_rows(COLUMNS)
        # pipelined: the statements go out without waiting for each answer (one round trip
        # per row would make a 1 M-event copy take most of an hour); any error still
        # aborts the one transaction
        with conn.cursor() as cur, conn.pipeline():
            cur.execute("SELECT pg_advisory_xact_lock(%s, 0)", (APPEND_LOCK,))
            last: tuple[int, str] | None = None
            for row in rows:
                seq, _id, run_id, kind, subject, _actor, at, payload = row[:8]
                cur.execute("INSERT INTO events(seq, id, run_id, kind, subject, actor, at, "
                            "payload, payload_hash, prev_hash, hash, idem_key) VALUES "
                            "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)", row)
                for sql, args in pg_schema.derived_statements(
                        seq=seq, run_id=run_id, kind=kind, subject=subject, at=at,
                        payload=json.loads(payload)):
                    cur.execute(sql, args)
                last = (seq, row[10])
            if last is not None:
                cur.execute("INSERT INTO head(one, seq, hash) VALUES (1, %s, %s)", last)
        conn.commit()
    with PostgresJournal(url) as target:
        after = target.verify()
    if not after.intact or (after.events, after.head_hash) != (before.events,
                                                               before.head_hash):
        raise JournalError(f"the copy in `{redact(url)}` does not verify as the source does "
                           f"({after.reason or after.head_hash})")
    return after


__all__ = ["SchemaStatus", "copy_sqlite", "migrate", "status"]
