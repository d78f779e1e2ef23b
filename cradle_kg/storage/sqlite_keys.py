"""The unique indexes of a SQLite journal, probed when it is opened to write.

The writable open compares ``sqlite_master``'s rows with the schema this code writes
(:func:`.sqlite_verify.schema_problem`), not the b-trees: an index whose ``rootpage``
its author pointed at an empty b-tree (``PRAGMA writable_schema``) reads as the
runtime's, and ``events_idem_key`` so swapped let a key be claimed twice — the tool ran
twice (``tests/security/test_374``). ``audit verify`` reads every page
(``PRAGMA integrity_check``); this reads a bounded number of rows, whatever the size:
for each unique index, the newest and the oldest :data:`PROBE_ROWS` rows of its table
(by rowid), of which at most :data:`PROBES` from each end are looked up through the
index, and each must be found there at its own row. An emptied, swapped or stale index
is refused; one crafted to lack a single chosen key is left to ``audit verify``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

#: the rows read from each end of a table (by rowid, no index)
PROBE_ROWS = 256
#: the rows looked up through the index, at most, from each end
PROBES = 8


@dataclass(frozen=True, slots=True)
class UniqueIndex:
    name: str
    table: str
    columns: tuple[str, ...]


def unique_indexes(conn: sqlite3.Connection) -> tuple[UniqueIndex, ...]:
    """The unique indexes of the schema ``conn`` holds over plain columns (a partial one's
    condition is its columns being set: ``events_idem_key``), by name."""
    found = []
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                 "ORDER BY name").fetchall():
        for row in conn.execute(f'PRAGMA index_list("{table}")').fetchall():
            name, unique, origin = row[1], row[2], row[3]
            if not unique or origin not in ("c", "u"):  # CREATE UNIQUE INDEX, UNIQUE
                continue
            columns = tuple(r[2] for r in conn.execute(f'PRAGMA index_info("{name}")'))
            if columns and all(isinstance(c, str) for c in columns):
                found.append(UniqueIndex(name, table, columns))
    return tuple(sorted(found, key=lambda i: i.name))


def _expected() -> tuple[UniqueIndex, ...]:
    from .chain import SCHEMA_STATEMENTS

    conn = sqlite3.connect(":memory:")
    try:
        for statement in SCHEMA_STATEMENTS:
            conn.execute(statement)
        return unique_indexes(conn)
    finally:
        conn.close()


#: the unique indexes this code writes (the schema check made sure they are the file's)
UNIQUE_INDEXES = _expected()


def _probe_sql(index: UniqueIndex) -> str:
    """The probed rows of ``index``'s table (the newest and the oldest :data:`PROBE_ROWS`,
    at most :data:`PROBES` of each with the columns set) that the index does not hold at
    their own rowid: the index's name and the rowid."""
    cols = ", ".join(index.columns)
    set_ = " AND ".join(f"{c} IS NOT NULL" for c in index.columns)
    ends = " UNION ALL ".join(
        f"SELECT * FROM (SELECT rowid AS rid, {cols} FROM (SELECT rowid, {cols} FROM "
        f"{index.table} NOT INDEXED ORDER BY rowid {order} LIMIT {PROBE_ROWS}) "
        f"WHERE {set_} LIMIT {PROBES})" for order in ("DESC", "ASC"))
    held = " AND ".join(f"i.{c} = p.{c}" for c in index.columns)
    return (f"SELECT * FROM (SELECT '{index.name}', '{index.table}', p.rid FROM ({ends}) AS p "
            f"WHERE NOT EXISTS (SELECT 1 FROM {index.table} AS i INDEXED BY {index.name} "
            f"WHERE {held} AND i.rowid = p.rid) LIMIT 1)")


#: every index's probe in one statement (one to prepare at each open, not fifteen)
PROBE_SQL = " UNION ALL ".join(_probe_sql(index) for index in UNIQUE_INDEXES) + " LIMIT 1"


def key_index_problem(conn: sqlite3.Connection) -> str | None:
    """The first unique index that does not hold a probed row of its table, named; or
    None. Run on a journal whose schema is this code's (checked before)."""
    row = conn.execute(PROBE_SQL).fetchone()
    if row is None:
        return None
    name, table, rowid = row
    return (f"the journal's index `{name}` does not hold row {rowid} of `{table}` (its "
            "b-tree is not the one its rows wrote)")


__all__ = ["PROBES", "PROBE_ROWS", "PROBE_SQL", "UNIQUE_INDEXES", "UniqueIndex",
           "key_index_problem"]
