"""The tamper corpus of ``test_05_journal_tamper.py``, on the PostgreSQL journal.

Generated from the live catalog (``information_schema.columns`` of the journal's schema,
not a list written here), so a column added by a later migration is edited too: every
edit of any column of any row, deleted / reordered / duplicated events, truncation (with
and without the head fixed), a re-chained journal, dropped indexes and tables, emptied
tables, an edited migration list, and objects added to the schema (a trigger, a table, a
function, a rule, row-level security) must all be reported broken.

Each case runs in one transaction that is rolled back: the tamper, then the verifier on
that transaction's snapshot (``verify_connection``); a few run through the real path too
(committed, then ``verify_postgres`` on its own read-only connection).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from cradle_kg.canonical import canonical_json, sha256_bytes
from cradle_kg.storage import GENESIS_HASH, Anchor, NewEvent, event_hash, open_journal
from cradle_kg.storage.pg_verify import verify_connection, verify_postgres
from tests.security.test_05_journal_tamper import EVENTS, T0, intent_payload

Tamper = Callable[[psycopg.Connection[Any]], object]


@dataclass(frozen=True)
class Case:
    name: str
    tamper: Tamper
    anchored: bool = False


def build(url: str) -> tuple[int, str]:
    with open_journal(url) as journal:
        for i, (kind, subject, payload, key) in enumerate(EVENTS):
            journal.append([NewEvent(run_id=f"run:{i % 2}", kind=kind, subject=subject,
                                     actor="agent:a", at=T0, payload=payload, idem_key=key)])
        report = journal.verify()
        assert report.intact, report
        return journal.head()


def _columns(conn: psycopg.Connection[Any]) -> dict[str, list[tuple[str, str, bool]]]:
    """Every table's columns as (name, data type, nullable), from the live catalog."""
    out: dict[str, list[tuple[str, str, bool]]] = {}
    for table, col, dtype, nullable in conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable = 'YES' "
            "FROM information_schema.columns WHERE table_schema = current_schema() "
            "ORDER BY table_name, ordinal_position"):
        out.setdefault(table, []).append((col, dtype, nullable))
    return out


def _edit(table: str, col: str, dtype: str, ctid: str) -> Iterator[Case]:
    at = f"{table}.{col}@{ctid}"
    where = f"WHERE ctid = '{ctid}'"
    if dtype in ("integer", "bigint", "double precision"):
        expr = f"COALESCE({col}, 0) + 100"  # a NULL one (an open task's resolution) too
    else:
        expr = (f"CASE WHEN {col} IS NULL THEN 'forged' WHEN right({col}, 1) = 'X' "
                f"THEN left({col}, -1) || 'Y' ELSE left({col}, -1) || 'X' END")
    yield Case(f"edit:{at}", lambda c: c.execute(f"UPDATE {table} SET {col} = {expr} {where}"))
    if dtype == "text":  # the same text, one trailing space longer: equal to the eye
        yield Case(f"pad:{at}", lambda c: c.execute(
            f"UPDATE {table} SET {col} = coalesce({col}, '') || ' ' {where}"))


def _null(table: str, col: str, dtype: str, ctid: str) -> Case:
    forged = "'forged'" if dtype == "text" else "1"  # a number column (a seq) forged too
    return Case(f"null:{table}.{col}@{ctid}", lambda c: c.execute(
        f"UPDATE {table} SET {col} = CASE WHEN {col} IS NULL THEN {forged} ELSE NULL END "
        f"WHERE ctid = '{ctid}'"))


def _sql(*statements: str) -> Tamper:
    return lambda c: [c.execute(s) for s in statements]  # type: ignore[call-overload]


def _rewrite_append(old: str, new: str) -> Tamper:
    """``cradle_append`` (migration 11) replaced by itself with ``old`` written ``new``."""
    def tamper(c: psycopg.Connection[tuple[Any, ...]]) -> None:
        row = c.execute("SELECT pg_get_functiondef('cradle_append'::regproc)").fetchone()
        assert row is not None and old in row[0]
        c.execute(row[0].replace(old, new))
    return tamper


def _swap(a: int, b: int) -> Tamper:
    return _sql(f"UPDATE events SET seq = -1 WHERE seq = {a}",
                f"UPDATE events SET seq = {a} WHERE seq = {b}",
                f"UPDATE events SET seq = {b} WHERE seq = -1")


def _rechain(c: psycopg.Connection[Any]) -> None:
    """Edit an event, then recompute every hash after it with the public hash function."""
    rows = c.execute("SELECT seq, id, run_id, kind, subject, actor, at, payload, idem_key "
                     "FROM events ORDER BY seq").fetchall()
    prev = GENESIS_HASH
    for seq, eid, run, kind, subject, actor, at, payload, key in rows:
        if seq == 2:
            payload = canonical_json({"amount": 1_000_000})
        ph = sha256_bytes(payload.encode("utf-8"))
        own = event_hash(seq=seq, event_id=eid, run_id=run, kind=kind, subject=subject,
                         actor=actor, at=at, payload_hash=ph, prev_hash=prev, idem_key=key)
        c.execute("UPDATE events SET payload = %s, payload_hash = %s, prev_hash = %s, "
                  "hash = %s WHERE seq = %s", (payload, ph, prev, own, seq))
        prev = own
    c.execute("UPDATE head SET hash = %s", (prev,))


def _truncate(keep: int, *, fix_head: bool) -> Tamper:
    def run(c: psycopg.Connection[Any]) -> None:
        c.execute("DELETE FROM events WHERE seq > %s", (keep,))
        if fix_head:
            c.execute("UPDATE head SET seq = %s, hash = (SELECT hash FROM events "
                      "WHERE seq = %s)", (keep, keep))
    return run


def corpus(conn: psycopg.Connection[Any]) -> list[Case]:
    columns = _columns(conn)
    assert {"events", "head", "usage", "schema_migrations"} <= set(columns)
    cases: list[Case] = []
    for table, cols in columns.items():
        for (ctid,) in conn.execute(f"SELECT ctid::text FROM {table}"):
            for col, dtype, nullable in cols:
                cases += _edit(table, col, dtype, ctid)
                if nullable:
                    cases.append(_null(table, col, dtype, ctid))
    n = len(EVENTS)
    # indexes of their own (a key's index goes with its constraint: `schema:unique-dropped`)
    indexes = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE c.relnamespace = current_schema()::regnamespace AND NOT EXISTS "
        "(SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)")]
    assert "events_idem_key" in indexes
    cases += [Case(f"delete:events@{s}", _sql(f"DELETE FROM events WHERE seq = {s}"))
              for s in range(1, n + 1)]
    cases += [Case(f"swap:{s}-{s + 1}", _swap(s, s + 1)) for s in range(1, n)]
    cases += [Case(f"duplicate:{s}", _sql(
        f"INSERT INTO events SELECT {n + 1}, 'evt-{n + 1:010d}', run_id, kind, subject, actor, "
        f"at, payload, payload_hash, prev_hash, hash, NULL FROM events WHERE seq = {s}"))
        for s in (1, n // 2, n)]
    cases += [Case(f"drop-index:{i}", _sql(f"DROP INDEX {i}")) for i in indexes]
    cases += [Case(f"drop-table:{t}", _sql(f"DROP TABLE {t} CASCADE")) for t in columns]
    cases += [
        Case("truncate:tail", _truncate(n - 2, fix_head=False)),
        Case("truncate:tail-head-fixed", _truncate(n - 2, fix_head=True), anchored=True),
        Case("truncate:rechained", _rechain, anchored=True),
        Case("empty:events", _sql("DELETE FROM events")),
        Case("empty:head", _sql("DELETE FROM head")),
        Case("empty:usage", _sql("DELETE FROM usage")),
        Case("migrations:deleted", _sql("DELETE FROM schema_migrations")),
        Case("migrations:added", _sql("INSERT INTO schema_migrations VALUES (99, 'x')")),
        Case("schema:trigger", _sql(
            "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS "
            "'BEGIN DELETE FROM head; RETURN NEW; END'",
            "CREATE TRIGGER t AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION f()")),
        Case("schema:function", _sql("CREATE FUNCTION g() RETURNS int LANGUAGE sql AS "
                                     "'SELECT 1'")),
        # the server-side append: rewritten to skip the lock or to hash otherwise, given
        # settings, or dropped
        Case("schema:append-unlocked", _rewrite_append(
            "PERFORM pg_advisory_xact_lock", "PERFORM pg_try_advisory_xact_lock")),
        Case("schema:append-hash", _rewrite_append("'sha256:' || encode",
                                                   "'sha256:' || md5('') || encode")),
        Case("schema:append-definer", _sql("ALTER FUNCTION cradle_append SECURITY DEFINER")),
        Case("schema:append-path", _sql("ALTER FUNCTION cradle_append SET search_path = x")),
        Case("schema:append-dropped", _sql("DROP FUNCTION cradle_append")),
        Case("schema:table", _sql("CREATE TABLE keys(k text)")),
        Case("schema:column", _sql("ALTER TABLE events ADD COLUMN note text")),
        Case("schema:type", _sql("ALTER TABLE events ALTER COLUMN at TYPE varchar")),
        Case("schema:rule", _sql("CREATE RULE r AS ON INSERT TO usage DO INSTEAD NOTHING")),
        Case("schema:rls", _sql("ALTER TABLE events ENABLE ROW LEVEL SECURITY")),
        Case("schema:unique-dropped", _sql("ALTER TABLE events DROP CONSTRAINT events_id_key")),
    ]
    return cases


#: PostgreSQL itself refuses these edits (a CHECK or a key); nothing else may be refused
REFUSED_OK = ("head.one", "events.seq", "schema_migrations.version", "open_intents.seq",
              "approval_ids.approval_id", "runs.run_id", "usage.scope")


@pytest.mark.slow
def test_every_tamper_of_the_corpus_is_detected(pg_url: str) -> None:
    head = build(pg_url)
    pristine = Anchor(hash=head[1], seq=head[0])
    missed, refused, unparsable = [], [], []
    with psycopg.connect(pg_url) as conn:  # one transaction per case, rolled back
        cases = corpus(conn)
        conn.rollback()
        assert len(cases) > 300
        for case in cases:
            try:
                case.tamper(conn)
            except psycopg.errors.IntegrityError:
                refused.append(case.name)
                conn.rollback()
                continue
            except psycopg.errors.InvalidTextRepresentation:
                # a run.outcome payload that is no longer JSON: the events_outcome index
                # (migration 4) parses it, so the database refuses to store it
                unparsable.append(case.name)
                conn.rollback()
                continue
            report = verify_connection(conn, anchor=pristine if case.anchored else None)
            conn.rollback()
            if report.intact:
                missed.append(case.name)
        assert verify_connection(conn).intact  # every case was rolled back
        conn.rollback()
    assert missed == []
    assert all(r.split(":")[1].split("@")[0] in REFUSED_OK for r in refused), refused
    assert all(r.startswith("edit:events.payload@") for r in unparsable), unparsable


@pytest.mark.parametrize("statement", [
    "UPDATE events SET payload = '{\"amount\":1}' WHERE seq = 2",
    "DROP INDEX events_idem_key",
    "UPDATE usage SET calls = calls + 1",
    "UPDATE usage SET total_calls = total_calls - 1",
])
def test_committed_tampering_is_found_through_the_real_path(pg_url: str,
                                                            statement: str) -> None:
    build(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(statement)  # type: ignore[call-overload]
    report = verify_postgres(pg_url)
    assert not report.intact and report.reason


def test_verify_reads_one_snapshot_while_others_append(pg_url: str) -> None:
    import threading

    build(pg_url)
    stop = threading.Event()

    def writer() -> None:
        with open_journal(pg_url) as j:
            i = 0
            while not stop.is_set():
                i += 1
                j.append([NewEvent(run_id="run:w", kind="note", subject=f"s:{i}",
                                   actor="agent:a", at=T0, payload={"i": i}),
                          NewEvent(run_id="run:w", kind="action.intent", subject=f"a:{i}",
                                   actor="agent:a", at=T0, payload=intent_payload(f"w-{i}", cost=1),
                                   idem_key=f"w-{i}")])

    t = threading.Thread(target=writer)
    t.start()
    try:
        reports = [verify_postgres(pg_url) for _ in range(5)]
    finally:
        stop.set()
        t.join(30)
    assert all(r.intact for r in reports), [r.reason for r in reports]
    assert reports[-1].events > len(EVENTS)  # the writer was writing meanwhile
