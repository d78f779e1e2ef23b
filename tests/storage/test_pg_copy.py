"""``journal copy``'s bulk path (:mod:`cradle_kg.storage.pg_copy`) on a real PostgreSQL: the
rows arrive by ``COPY`` in batches, the derived tables are computed set-wise, and the copy
is verified before its one transaction commits — so its derived state equals what the
journal's own row-by-row appends write, and a copy that fails anywhere leaves the target
empty with its schema whole."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cradle_kg.errors import JournalError
from cradle_kg.storage import SqliteJournal, open_journal
from cradle_kg.storage.counting import SERVER_SCOPE_PREFIX, USAGE_FIELDS
from cradle_kg.storage.pg_admin import copy_sqlite
from cradle_kg.storage.pg_connect import connect
from cradle_kg.storage.pg_copy import bulk_copy
from cradle_kg.storage.pg_schema import DERIVATIONS
from cradle_kg.storage.pg_scratch import ScratchPostgres
from cradle_kg.storage.pg_verify import catalog
from tests.storage.test_journal_contract import SCRIPT, ev

#: SCRIPT, then more of every kind the derived tables read, across runs and seconds
MORE = [
    *SCRIPT,
    ev(7, "run.outcome", subject="action:a2",
       outcome={"proposal_id": "p1", "status": "denied"}),
    ev(8, "human_task.opened", run="run:b", subject="task:t1", task_id="t1"),
    ev(9, "action.intent", run="run:b", subject="action:b1", key="k3", cost=0.25,
       agent="agent:a", tenant="acme"),
    ev(10, "workflow.started", run="run:c", subject="workflow:w"),
    ev(11, "human.requested", run="run:c", subject="step:s1", step="s1"),
    ev(12, "approval.requested", run="run:c", subject="approval:d2", approval={"id": "ap-2"}),
    ev(13, "human_task.resolved", run="run:b", subject="task:t1", task_id="t1"),
]


def _state(url: str) -> list[list[tuple[object, ...]]]:
    """The derived tables and the head — the usage rows of the server scopes apart: an
    appended intent counts there in the server's second of its append, a copied one in
    its own ``at``'s (:func:`_server_rows`)."""
    with connect(url) as conn:
        return [[r for r in conn.execute(stored).fetchall()
                 if not str(r[0]).startswith(SERVER_SCOPE_PREFIX)]
                for _t, stored, _d in DERIVATIONS] \
            + [list(conn.execute("SELECT * FROM head").fetchall())]


def _server_rows(url: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The usage rows of the intents' scopes and of their server scopes, the prefix off."""
    with connect(url) as conn:
        rows = conn.execute(DERIVATIONS[0][1]).fetchall()
    intents = [r for r in rows if r[0] in ("*", *USAGE_FIELDS)]
    server = [(str(r[0]).removeprefix(SERVER_SCOPE_PREFIX), *r[1:]) for r in rows
              if str(r[0]).startswith(SERVER_SCOPE_PREFIX)]
    return intents, sorted(server)


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "journal.sqlite"
    with SqliteJournal(src) as j:
        j.append(MORE)
    return src


def test_a_bulk_copy_derives_what_appends_write(tmp_path: Path, postgres: ScratchPostgres,
                                                pg_url: str) -> None:
    src = _source(tmp_path)
    seen: list[tuple[str, int, int]] = []
    report = copy_sqlite(src, pg_url, progress=lambda *a: seen.append(a))
    appended = postgres.journal_schema()  # the same events through the journal's append
    with open_journal(appended) as j:
        j.append(MORE)
    assert report.intact and report.events == len(MORE)
    assert _state(pg_url) == _state(appended)
    intents, server = _server_rows(pg_url)  # copied: counted in their own seconds
    assert intents and server == sorted(intents)
    intents, server = _server_rows(appended)  # appended: each in its server second
    assert sum(int(str(r[3])) for r in server) == sum(int(str(r[3])) for r in intents) > 0
    with open_journal(pg_url) as pg:
        assert pg.verify().intact and pg.head() == (len(MORE), report.head_hash)
        assert pg.dangling_intents() == [(9, "action:b1")]
        assert pg.approval_place("ap-2")[0] == "approval:d2"
    phases = [p for p, _d, _t in seen]
    assert phases.index("verifying source") < phases.index("copying") \
        < phases.index("deriving") < phases.index("verifying copy")


def test_rows_go_in_batches_up_to_the_verified_head(tmp_path: Path, pg_url: str) -> None:
    src = _source(tmp_path)
    with SqliteJournal(src) as head_j:
        head = head_j.head()
    copied: list[int] = []

    def grow(phase: str, done: int, total: int) -> None:
        if phase == "copying":
            copied.append(done)
            with SqliteJournal(src) as j:  # the source grows under the copy
                j.append([ev(100 + done)])

    report = bulk_copy(src, pg_url, progress=grow, batch=4)
    assert copied == [4, 8, 12, 13]
    assert (report.events, report.head_hash) == head  # what was verified, not more
    with open_journal(pg_url) as pg:
        assert pg.head() == head


def _untouched(url: str, before: set[str]) -> None:
    with connect(url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone() == (0,)
        assert conn.execute("SELECT COUNT(*) FROM head").fetchone() == (0,)
        for table, _s, _d in DERIVATIONS:
            assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone() == (0,), table
        assert catalog(conn) == before  # the dropped indexes came back with the rollback


def test_a_failure_anywhere_leaves_the_target_empty(tmp_path: Path, pg_url: str) -> None:
    src = _source(tmp_path)
    with connect(pg_url) as conn:
        before = catalog(conn)
    for when in ("copying", "indexing", "deriving", "verifying copy"):
        def fail(phase: str, done: int, total: int, when: str = when) -> None:
            if phase == when:
                raise RuntimeError(f"stopped while {phase}")

        with pytest.raises(RuntimeError, match=when):
            bulk_copy(src, pg_url, progress=fail, batch=5)
        _untouched(pg_url, before)
    assert copy_sqlite(src, pg_url).intact  # and the target takes a copy afterwards


def test_a_broken_source_is_refused_before_anything_is_written(tmp_path: Path,
                                                                pg_url: str) -> None:
    src = _source(tmp_path)
    with connect(pg_url) as conn:
        before = catalog(conn)
    db = sqlite3.connect(src)
    db.execute("UPDATE events SET payload = '{\"i\": 99}' WHERE seq = 3")
    db.commit()
    db.close()
    with pytest.raises(JournalError, match="is broken"):
        copy_sqlite(src, pg_url)
    _untouched(pg_url, before)


def test_a_target_with_events_is_refused(tmp_path: Path, pg_url: str) -> None:
    with open_journal(pg_url) as pg:
        pg.append([ev(1)])
    with pytest.raises(JournalError, match="already holds events"):
        copy_sqlite(_source(tmp_path), pg_url)
    with open_journal(pg_url) as pg:
        assert pg.head()[0] == 1 and pg.verify().intact


def test_a_copy_analyzes_its_own_tables_only(tmp_path: Path, postgres: ScratchPostgres,
                                             pg_url: str) -> None:
    """The copy's ``ANALYZE`` was bare: it locked and read every table of the database —
    another application's, every other journal's schema — inside the copy's transaction (a
    database holding many journals ran out of lock slots, "out of shared memory")."""
    other = postgres.journal_schema()  # another schema of the same database, with a table
    with connect(other) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS other_app (n int)")
        conn.execute("INSERT INTO other_app VALUES (1)")
    copy_sqlite(_source(tmp_path), pg_url)
    with connect(other) as conn:
        analyzed = conn.execute("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = "
                                "'other_app' AND schemaname = current_schema()").fetchone()
    with connect(pg_url) as conn:
        own = conn.execute("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = "
                           "'events' AND schemaname = current_schema()").fetchone()
    assert own is not None and own[0] is not None  # the copy's own tables are analyzed
    assert analyzed is not None and analyzed[0] is None, analyzed
