"""Every journal the suite wrote, checked against :mod:`cradle_kg.storage.invariants`.

``pytest -p tests.journal_audit --audit-journals=REPORT ...`` — at the end of the session,
before the throw-away PostgreSQL server stops, every SQLite journal under the session's
temporary directory and every PostgreSQL journal (a schema with an ``events`` table, in
any database of the session's server) is read, and one JSON line per journal written to
REPORT: where it is, whether ``audit verify`` finds it intact, and each invariant's first
finding. What proves that the invariants hold on whatever the runtime writes (no false
positive): a finding on a journal whose chain is intact and that no test forged.
Journals in a module's scope on PostgreSQL are dropped with the module and not seen.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.storage import invariants
from cradle_kg.storage.pg_verify import verify_postgres
from cradle_kg.storage.sqlite_verify import verify_journal


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--audit-journals", default=None, metavar="REPORT",
                     help="at the session's end, check the invariants of every journal the "
                          "tests wrote; one JSON line per journal to REPORT")


def _line(where: str, intact: bool, reason: str | None,
          findings: Sequence[invariants.Finding | None]) -> dict[str, Any]:
    return {"journal": where, "intact": intact, "reason": reason,
            "findings": [[f.invariant, f.seq, f.reason] for f in findings if f is not None]}


def _sqlite(base: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(base.rglob("*.sqlite")):
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'events'"
                                    ).fetchone():
                    continue
                findings = invariants.all_findings("sqlite", conn.execute)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            yield {"journal": str(path), "error": str(exc)}
            continue
        report = verify_journal(path)
        yield _line(str(path), report.intact, report.reason, findings)


def _postgres(server: Any) -> Iterator[dict[str, Any]]:
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        databases = [r[0] for r in conn.execute(
            "SELECT datname FROM pg_database WHERE NOT datistemplate")]
    for database in databases:
        with psycopg.connect(server.url(database), autocommit=True) as conn:
            schemas = [r[0] for r in conn.execute(
                "SELECT table_schema FROM information_schema.tables "
                "WHERE table_name = 'events' ORDER BY 1")]
        for schema in schemas:
            url = f"{server.url(database)}?options=-csearch_path%3D{schema}"
            try:
                with psycopg.connect(url) as conn:
                    def rows(sql: str, conn: Any = conn) -> Iterator[Sequence[Any]]:
                        with conn.cursor(name="audit") as cur:
                            cur.execute(sql)
                            yield from cur
                    findings = invariants.all_findings("postgresql", rows)
            except psycopg.Error as exc:
                yield {"journal": url, "error": str(exc)}
                continue
            report = verify_postgres(url)
            yield _line(url, report.intact, report.reason, findings)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    out = session.config.getoption("--audit-journals")
    if not out:
        return
    from tests.suite_backend import _STATE

    lines: list[dict[str, Any]] = list(_sqlite(session.config._tmp_path_factory.getbasetemp()))
    state = session.config.stash.get(_STATE, None)
    if state is not None and state._pg is not None:
        lines.extend(_postgres(state._pg))
    with open(out, "w") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")
