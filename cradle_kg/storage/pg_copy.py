"""``journal copy``: a SQLite journal into an empty PostgreSQL journal, in bulk.

One transaction, so a copy that fails anywhere leaves the target as it was (empty):

1. the append lock is taken (no worker can append while the copy runs);
2. the event indexes that are not constraints are dropped (they are rebuilt once, from
   their own definitions, after the rows are in: maintaining the indexes row by row is
   most of a row-wise copy's cost);
3. the source's rows stream in through ``COPY events FROM STDIN`` in batches (of at most
   :data:`BATCH` rows and :data:`BATCH_BYTES` of text: an agent's proposals and their
   decisions are journaled at up to ``max_bytes`` each, a tool's output at up to
   ``max_output_bytes``, so a batch counted in rows alone held whatever they weighed,
   ``tests/security/test_78``), up to the head the source was verified at; each row's
   ``seq`` and ``prev_hash`` are checked against the row before it on the way (a source
   that changed under the copy stops it);
4. the indexes are rebuilt, then every derived table is computed set-wise from the
   events with the same SQL ``audit verify`` compares it with
   (:data:`.pg_schema.DERIVATIONS`), and the head row is written, and the source's digest
   key (:meth:`.journal.Journal.digest_key`), if it has one: the digests of secret
   arguments computed there are computed alike here (a target with a key of its own
   other than the source's is refused);
5. ``audit verify`` runs inside the same transaction (:func:`.pg_verify.verify_connection`:
   every hash, the catalog, every derived table); the transaction commits only when the
   copy is intact and ends at the source's head.

The earlier copy (one ``INSERT`` and the derived statements per event, pipelined) grew
faster than linearly past 100 k events; this one is a few set-wise statements.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import JournalError
from .chain import GENESIS_HASH, ChainReport
from .journal import DIGEST_KEY_NAME
from .pg_connect import APPEND_LOCK, connect, redact
from .pg_schema import DERIVATIONS
from .pg_verify import verify_connection
from .sqlite import SqliteJournal
from .walk import COLUMNS

if TYPE_CHECKING:
    import psycopg

#: (phase, done, total): phases ``verifying source``, ``copying``, ``indexing``,
#: ``deriving``, ``verifying copy``
CopyProgress = Callable[[str, int, int], None]

BATCH = 50_000
#: the most text a batch holds (one row more at most: a row is never split)
BATCH_BYTES = 32 << 20

_LOOSE_INDEXES = (
    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
    "AND tablename = 'events' AND indexname NOT IN "
    "(SELECT conname FROM pg_constraint WHERE conrelid = 'events'::regclass) "
    "ORDER BY indexname")


def _columns(stored_sql: str) -> str:
    """The column list of a derivation's ``SELECT cols FROM table ...`` text."""
    return stored_sql.split(" FROM ", 1)[0].removeprefix("SELECT ").strip()


def _batch(rows: Iterator[tuple[Any, ...]], most: int, budget: int) -> list[tuple[Any, ...]]:
    """The next rows of ``rows``: at most ``most``, and no more once ``budget`` characters
    of their text are in (so at most one row past it)."""
    chunk: list[tuple[Any, ...]] = []
    size = 0
    while len(chunk) < most and size < budget:
        row = next(rows, None)
        if row is None:
            break
        chunk.append(row)
        size += sum(len(v) for v in row if isinstance(v, str))
    return chunk


def bulk_copy(source: Path, url: str, *, progress: CopyProgress | None = None,
              batch: int = BATCH) -> ChainReport:
    """Copy the SQLite journal at ``source`` into the empty, migrated PostgreSQL journal
    at ``url``; the report of the copy's verification (intact, the source's head)."""
    import psycopg

    def tell(phase: str, done: int, total: int) -> None:
        if progress is not None:
            progress(phase, done, total)

    with SqliteJournal(source, read_only=True) as journal:  # never upgraded (test_293)
        before = journal.verify(progress=lambda d, t: tell("verifying source", d, t))
        if not before.intact:
            raise JournalError(f"the journal `{source}` is broken ({before.reason}): "
                               "it is not copied")
        total = before.events
        try:
            with connect(url, autocommit=False) as conn:
                report = _copy(conn, url, journal, before, total, batch, tell)
                if report.intact:
                    conn.commit()
                else:
                    conn.rollback()
        except psycopg.Error as exc:
            raise JournalError(f"cannot copy into `{redact(url)}`: {str(exc).strip()}") \
                from exc
    if not report.intact or (report.events, report.head_hash) != (total, before.head_hash):
        raise JournalError(f"the copy in `{redact(url)}` does not verify as the source does "
                           f"({report.reason or report.head_hash}): nothing was written")
    return report


def _copy(conn: psycopg.Connection[tuple[Any, ...]], url: str, journal: SqliteJournal,
          before: ChainReport, total: int, batch: int,
          tell: CopyProgress) -> ChainReport:
    conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (APPEND_LOCK,))
    if conn.execute("SELECT 1 FROM events LIMIT 1").fetchone() is not None \
            or conn.execute("SELECT 1 FROM head").fetchone() is not None:
        raise JournalError(f"the journal `{redact(url)}` already holds "
                           "events: copy into an empty database")
    conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
    loose = conn.execute(_LOOSE_INDEXES).fetchall()
    for name, _definition in loose:
        conn.execute(f'DROP INDEX "{name}"')
    rows = journal.raw_rows(COLUMNS)
    seq, prev, done = 0, GENESIS_HASH, 0
    with conn.cursor() as cur:
        while done < total:
            chunk = _batch(rows, min(batch, total - done), BATCH_BYTES)
            if not chunk:
                break
            with cur.copy(f"COPY events ({COLUMNS}) FROM STDIN") as copy:
                for row in chunk:
                    seq += 1
                    if row[0] != seq or row[9] != prev:
                        raise JournalError(
                            f"the source changed during the copy at seq `{row[0]}`: "
                            "nothing was written", hint="copy again")
                    prev = row[10]
                    copy.write_row(row)
            done += len(chunk)
            tell("copying", done, total)
    if (done, prev) != (total, before.head_hash):
        raise JournalError(f"the source ended at seq `{done}`, not at its verified head "
                           f"`{total}`: nothing was written")
    for n, (_name, definition) in enumerate(loose, 1):
        conn.execute(definition)
        tell("indexing", n, len(loose))
    for n, (table, stored_sql, derived_sql) in enumerate(DERIVATIONS, 1):
        conn.execute(f"INSERT INTO {table}({_columns(stored_sql)}) {derived_sql}")
        tell("deriving", n, len(DERIVATIONS))
    if total:
        conn.execute("INSERT INTO head(one, seq, hash) VALUES (1, %s, %s)", (total, prev))
    _copy_key(conn, url, journal.stored_digest_key())
    # the journal's own tables only: a bare ANALYZE takes a lock on (and reads) every table
    # of the database, other applications' and other schemas' too, inside this transaction
    # (a database of many journals ran out of lock slots: "out of shared memory")
    tables = dict.fromkeys(["events", "head", *(table for table, _, _ in DERIVATIONS)])
    conn.execute("ANALYZE " + ", ".join(tables))
    return verify_connection(conn, progress=lambda d, t: tell("verifying copy", d, t))


def _copy_key(conn: psycopg.Connection[tuple[Any, ...]], url: str, key: bytes | None) -> None:
    """The source's digest key into the target (which may have written one of its own
    while empty: kept only if it is the same)."""
    import psycopg

    if key is None:
        return
    try:
        conn.execute("INSERT INTO journal_keys(name, key) VALUES (%s, %s) "
                     "ON CONFLICT (name) DO NOTHING", (DIGEST_KEY_NAME, key))
        row = conn.execute("SELECT key FROM journal_keys WHERE name = %s",
                           (DIGEST_KEY_NAME,)).fetchone()
    except psycopg.Error as exc:  # the primary line: a DETAIL may quote the row (the key)
        raise JournalError(f"cannot copy the digest key into `{redact(url)}`: "
                           f"{exc.diag.message_primary or type(exc).__name__}") from None
    if row is None or bytes(row[0]) != key:
        raise JournalError(f"the journal `{redact(url)}` already has a digest key of its own: "
                           "copy into an empty database")


__all__ = ["BATCH", "CopyProgress", "bulk_copy"]
