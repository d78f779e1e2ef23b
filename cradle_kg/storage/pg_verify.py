"""``audit verify`` on the PostgreSQL journal: read only, one snapshot, streamed.

One ``REPEATABLE READ, READ ONLY`` transaction reads the catalog, the migrations, the head,
every event (a page at a time: at most :data:`PAGE_ROWS` rows and about
:data:`PAGE_BYTES` of text, so memory stays bounded however large the events are — an
agent's proposal and its decision are journaled at up to ``max_bytes`` each,
``tests/security/test_78``) and the derived tables: a concurrent writer cannot cause a
false break, and nothing is written. What each column is checked by is the table in
:mod:`.sqlite_verify` (same events, same walk, :func:`.walk.walk`); besides it, the schema
must be exactly the one the migrations create (:data:`.pg_catalog.EXPECTED`: relations,
columns, indexes, constraints, triggers, rules, row-level policies, functions) and
``schema_migrations`` must list exactly this code's migrations. Then, on the same snapshot,
what the events mean (:mod:`.invariants`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

from ..errors import JournalError
from . import invariants, pg_schema
from .chain import GENESIS_HASH, Anchor, ChainReport, Progress
from .digest_check import SECRET_DECISIONS_SQL, STORED_KEY_SQL, key_problem
from .pg_catalog import EXPECTED, OPEN_EXPECTED
from .pg_objects import CATALOG_SQL, OPEN_SQL, problem
from .sqlite_derived import USAGE_EXACT
from .walk import COLUMNS, ChainBroken, walk

if TYPE_CHECKING:
    import psycopg

#: the most rows and (one row more at most) the most text of events held at once
PAGE_ROWS, PAGE_BYTES = 2000, 32 << 20
_ROW_BYTES = " + ".join(f"COALESCE(octet_length({c}), 0)" for c in (
    "id", "run_id", "kind", "subject", "actor", "at", "payload"))
#: a page: the next PAGE_ROWS rows by seq (their lengths read, not their values), kept
#: while the text before each is under the budget (the first always); WHERE picks the rows
#: after the last page's (none for the first page: every seq a tampered table may hold)
_PAGE = (f"SELECT {COLUMNS} FROM (SELECT *, SUM({_ROW_BYTES}) OVER (ORDER BY seq) - "
         f"({_ROW_BYTES}) AS before FROM (SELECT * FROM events {{where}} ORDER BY seq "
         f"LIMIT {PAGE_ROWS}) e) p WHERE before < %(budget)s ORDER BY seq")
_FIRST_PAGE, _NEXT_PAGE = _PAGE.format(where=""), _PAGE.format(where="WHERE seq > %(after)s")


def _events(conn: psycopg.Connection[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """Every event row in seq order, a bounded page at a time (in the caller's snapshot)."""
    page = conn.execute(_FIRST_PAGE, {"budget": PAGE_BYTES}).fetchall()
    while page:
        yield from page
        page = conn.execute(_NEXT_PAGE, {"budget": PAGE_BYTES,
                                         "after": page[-1][0]}).fetchall()


def verify_postgres(url: str, *, anchor: Anchor | None = None,
                    progress: Progress | None = None, semantics: bool = False,
                    schema: str | None = None) -> ChainReport:
    """Verify the journal at ``url``: in ``schema`` when given (an open journal's own:
    the one it opened, whatever the URL's path resolves to now, ``test_419``)."""
    import psycopg

    from .pg_connect import connect, keep_schema, redact

    try:
        conn = connect(url, autocommit=False)
    except JournalError as exc:
        return ChainReport(False, 0, GENESIS_HASH, None, None, str(exc))
    try:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        if schema is not None:
            keep_schema(conn, schema)
        return verify_connection(conn, anchor=anchor, progress=progress,
                                 semantics=semantics)
    except psycopg.Error as exc:
        return ChainReport(False, 0, GENESIS_HASH, None, None,
                           f"the journal `{redact(url)}` cannot be read: {str(exc).strip()}")
    finally:
        conn.rollback()
        conn.close()


def verify_connection(conn: psycopg.Connection[tuple[Any, ...]], *,
                      anchor: Anchor | None = None, progress: Progress | None = None,
                      semantics: bool = False) -> ChainReport:
    """Verify inside the connection's current transaction (the caller's snapshot)."""
    try:
        _check_catalog(conn)
        head = conn.execute("SELECT seq, hash FROM head").fetchall()
        report = walk(_events(conn), head, anchor, progress)
        if report.intact:
            mismatch = _compare(conn) or _key_problem(conn)
            if mismatch is not None:
                report = ChainReport(False, report.events, report.head_hash, None, None,
                                     mismatch)
        if report.intact and semantics:
            report = invariants.report(report, invariants.check("postgresql", _rows(conn)))
        return report
    except ChainBroken as broken:
        return ChainReport(False, broken.events, GENESIS_HASH, broken.seq, broken.event_id,
                           broken.reason)


def _key_problem(conn: psycopg.Connection[tuple[Any, ...]]) -> str | None:
    """The digest key beside the chain still makes its digests (:mod:`.digest_check`)."""
    stored = conn.execute(STORED_KEY_SQL).fetchone()
    with conn.cursor(name="cradle_digest_check") as rows:
        rows.execute(SECRET_DECISIONS_SQL)
        return key_problem(rows, bytes(stored[0]) if stored else None)


def _rows(conn: psycopg.Connection[tuple[Any, ...]]) -> invariants.Rows:
    """Each query's rows through a server-side cursor of its own (constant memory)."""
    def rows(sql: str) -> Iterator[Sequence[Any]]:
        with conn.cursor(name="cradle_invariant") as cur:
            cur.itersize = 2000
            cur.execute(sql)
            yield from cur
    return rows


def catalog(conn: psycopg.Connection[tuple[Any, ...]]) -> set[str]:
    return {str(r[0]) for r in conn.execute(CATALOG_SQL)}


def schema_problem(conn: psycopg.Connection[tuple[Any, ...]]) -> str | None:
    """How the journal's schema differs from the one the migrations make, naming the
    first object that differs (:func:`.pg_objects.problem`), or None."""
    found = catalog(conn)
    if not found:
        return "the journal has no tables: it was emptied or never migrated"
    return problem(found, EXPECTED)


def open_problem(conn: psycopg.Connection[tuple[Any, ...]]) -> str | None:
    """:func:`schema_problem` of what a write relies on (:data:`.pg_objects.OPEN_SQL`),
    read by a journal when it opens."""
    return problem({str(r[0]) for r in conn.execute(OPEN_SQL)}, OPEN_EXPECTED)


def _check_catalog(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
    mismatch = schema_problem(conn)
    if mismatch is not None:
        raise ChainBroken(mismatch)
    applied = [tuple(r) for r in conn.execute(
        "SELECT version, name FROM schema_migrations ORDER BY version")]
    want = [(m.version, m.name) for m in pg_schema.MIGRATIONS]
    if applied != want:
        raise ChainBroken(f"the journal's `schema_migrations` lists {applied!r}, not the "
                          f"migrations {want!r}: it was edited")


def _same(stored: tuple[Any, ...], derived: tuple[Any, ...], table: str) -> bool:
    exact = {"usage": USAGE_EXACT,
             "server_times": pg_schema.SERVER_TIMES_EXACT}.get(table, len(derived))
    pairs = list(zip(stored, derived, strict=True))
    if any(a != b or type(a) is not type(b) for a, b in pairs[:exact]):
        return False
    if table == "server_times":  # the server's time of the append: not derived
        return True
    return all(isinstance(a, float) and isinstance(b, float)
               and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) for a, b in pairs[exact:])


def _compare(conn: psycopg.Connection[tuple[Any, ...]]) -> str | None:
    import json

    for n, (table, stored_sql, derived_sql) in enumerate(pg_schema.DERIVATIONS):
        with conn.cursor(name=f"cradle_stored_{n}") as stored, \
                conn.cursor(name=f"cradle_derived_{n}") as derived:
            stored.execute(stored_sql)
            derived.execute(derived_sql)
            for row, want in zip_longest(stored, derived):
                if row is None or want is None or not _same(tuple(row), tuple(want), table):
                    shown = json.dumps(list(row) if row is not None else None, default=repr)
                    return (f"the derived table `{table}` does not match the events (row "
                            f"{shown[:120]}): it was edited, or written by something else")
    return None


__all__ = ["catalog", "open_problem", "schema_problem", "verify_connection", "verify_postgres"]
