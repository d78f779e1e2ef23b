"""A PostgreSQL journal's recorded server times moved back, for the tests that move a
runtime's clock past an hour's window (or journal events dated in the past) to see a quota
free up: on PostgreSQL the evidence quotas and the refusals quota read the hour on the
journal server's clock, at the times the server recorded at each append (``server_times``,
migration 20, ``tests/security/test_607``, ``test_608``). Nothing on a SQLite journal (one
host's file: its quotas read the events' ``at``)."""

from __future__ import annotations

from datetime import timedelta

from cradle_kg import Runtime
from cradle_kg.storage.pg_schema import SERVER_REFUSALS_REBUILD


def age_server_times(rt: Runtime, by: timedelta | None = None) -> None:
    """Each recorded server time moved back ``by``; None: set to its event's own ``at``, as
    if each had been appended when it is dated. The refusals' server buckets are derived
    again from them (``audit verify`` then agrees)."""
    url = getattr(rt.journal, "url", None)
    if not isinstance(url, str) or not url.startswith("postgresql"):
        return
    import psycopg

    moved = ("substr(e.at, 1, 26)" if by is None else
             "to_char(s.at::timestamp - make_interval(secs => %s), "
             "'YYYY-MM-DD\"T\"HH24:MI:SS.US')")
    with psycopg.connect(url, autocommit=False) as conn:
        conn.execute(f"UPDATE server_times s SET at = {moved} FROM events e "
                     "WHERE e.seq = s.seq", () if by is None else (by.total_seconds(),))
        for statement in SERVER_REFUSALS_REBUILD:
            conn.execute(statement)
