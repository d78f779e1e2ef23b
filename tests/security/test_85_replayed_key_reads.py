"""What answering a resubmitted key or proposal reads does not grow with the replays or the run.

Finding: a keyed write submitted again with the same key (an agent retrying, a client
that resends its last call, a loop) is answered from the record — the action's last
``run.outcome`` — and every such answer journals an ``action.replayed`` about the action.
``recorded_outcome`` found the outcome by decoding *every* event about the action, the
earlier replays included: the N-th resubmission decoded N rows, so N resubmissions cost
O(N²) — 27 ms a call at 3,000 resubmissions of one key on this machine (1.4 ms at the
first), under the journal's reads every other submission waits on. The benches that
measured "governed writes" per worker (``bench_workers.py``, ``bench_writers.py``,
``bench_follow.py``) sent every call of a worker with one key, and so measured this path.

Now the outcome is one probe of a partial index, ``events_subject_outcome (subject, seq)
WHERE kind = 'run.outcome'`` (SQLite format 8, PostgreSQL migration 9), on both journals:
one row decoded, and no walk over the replays written since (through ``events_subject``
the newest-first walk would still visit one row per replay). Counted as the rows the
journal decodes and shown by the query plan, not timed: the machine is shared.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus
from cradle_kg.storage import JOURNAL_FORMAT, JOURNAL_URL_ENV
from cradle_kg.storage.counting import last_for_subject_sql
from tests.conftest import make_config, proposal

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def _same_key(pid: str) -> dict[str, Any]:
    # one task, one step, the same arguments: the same derived key every time
    return proposal(pid, "demo.ledger.credit", {"account": "a1", "amount": 5},
                    task_id="task-retry")


def test_answering_a_resubmitted_key_reads_the_same_whatever_the_replays(
        home: Path, decoded: Callable[[], int]) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        first = rt.submit(_same_key("p-0"))
        assert first.status is OutcomeStatus.EXECUTED and not first.replayed
        rows = []
        for upto in (10, 60):
            while len(rt.journal.events_for_subject(first.action.id)) < upto:
                again = rt.submit(_same_key(f"p-{upto}-{len(rows)}-"
                                            f"{rt.journal.head()[0]}"))
                assert again.replayed and again.status is OutcomeStatus.EXECUTED
            before = decoded()
            answer = rt.submit(_same_key(f"p-last-{upto}"))
            rows.append(decoded() - before)
            # the answer is the recorded one, not a second effect
            assert answer.replayed and answer.action.id == first.action.id
            assert answer.model_dump(exclude={"replayed"}) == first.model_dump(
                exclude={"replayed"})
        # before: every event about the action decoded (11 and 61 rows); now 4 and 4
        assert rows[1] <= rows[0] <= 4, rows


def test_the_recorded_outcome_is_one_probe_of_the_outcome_index(
        home: Path, journal_backend: str) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        first = rt.submit(_same_key("p-0"))
        for i in range(5):
            assert rt.submit(_same_key(f"p-{i + 1}")).replayed
        target = os.environ.get(JOURNAL_URL_ENV) or rt.journal.location
        last = rt.journal.last_for_subject(first.action.id, "run.outcome")
        assert last is not None and last.payload["outcome"]["proposal_id"] == "p-0"
        assert rt.journal.last_for_subject(first.action.id, "action.replayed") is not None
    if journal_backend == "postgresql":
        import psycopg

        sql, args = last_for_subject_sql("run.outcome", "seq", "%s")
        assert args == ()
        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute("SET enable_seqscan = off")  # a small table: no scan either way
            plan = " ".join(str(r[0]) for r in conn.execute("EXPLAIN " + sql,
                                                             (first.action.id,)))
        assert "using events_subject_outcome" in plan, plan
        return
    import sqlite3

    sql, args = last_for_subject_sql("run.outcome", "seq", "?")
    assert args == ()
    conn = sqlite3.connect(target)
    try:
        plan = " ".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql,
                                                        (first.action.id,)))
    finally:
        conn.close()
    assert "USING INDEX events_subject_outcome (subject=?)" in plan, plan
    assert "TEMP B-TREE" not in plan, plan



def test_an_identical_proposal_again_is_one_probe_whatever_the_run(
        home: Path, journal_backend: str) -> None:
    """The sibling finding: the identical proposal (same id, same content) submitted again
    is answered from its last outcome in the run (``Journal.latest_outcome``), which the
    SQLite journal found by reading every event of the run and extracting the proposal id
    from each outcome's JSON — 9.6 ms a resubmission in a run of 500 reads, 65 ms at 4,000
    (linear in the run; an MCP session is one run). PostgreSQL had an index for it since
    migration 4; SQLite's format 8 has the same one (``events_outcome``): 1.1 ms at both."""
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        for i in range(12):
            assert rt.submit(proposal(f"p-{i}", "demo.ledger.balance", {"account": "a1"},
                                      task_id="task-long", step=i)).ok
        again = rt.submit(proposal("p-0", "demo.ledger.balance", {"account": "a1"},
                                   task_id="task-long", step=0))
        assert again.replayed and again.proposal_id == "p-0"
        target = os.environ.get(JOURNAL_URL_ENV) or rt.journal.location
    if journal_backend == "postgresql":
        return  # its plan: tests/storage/test_journal_contract.py (migration 4's index)
    import sqlite3

    from cradle_kg.storage.sqlite import LATEST_OUTCOME_SQL

    conn = sqlite3.connect(target)
    try:
        plan = " ".join(str(r[3]) for r in conn.execute(
            "EXPLAIN QUERY PLAN " + LATEST_OUTCOME_SQL.format(cols="seq"),
            ("run:task-long", "p-0")))
    finally:
        conn.close()
    assert "USING INDEX events_outcome (run_id=? AND <expr>=?)" in plan, plan
    assert "TEMP B-TREE" not in plan, plan

def test_a_journal_written_before_the_index_gets_it(home: Path, journal_backend: str) -> None:
    """A SQLite journal of format 7 gains the index when opened (nothing else changes: no
    derived table is rebuilt); a PostgreSQL journal at migration 8 is refused until ``db
    migrate`` (migration 9) adds it. Both answer as before and verify."""
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        first = rt.submit(_same_key("p-0"))
        target = os.environ.get(JOURNAL_URL_ENV) or rt.journal.location
    if journal_backend == "postgresql":
        import psycopg

        from cradle_kg.errors import JournalError
        from cradle_kg.storage import open_journal
        from cradle_kg.storage.pg_admin import migrate

        with psycopg.connect(target, autocommit=True) as pg:
            pg.execute("DROP INDEX events_subject_outcome")
            pg.execute("DROP TABLE journal_keys")  # migration 10's
            pg.execute("DROP FUNCTION cradle_append")  # migration 11's
            pg.execute("DROP TABLE approval_exclusions")  # migration 12's
            pg.execute("DROP TABLE starting_runs")  # migration 13's
            pg.execute("DROP TABLE unrun_approvals")  # migration 14's
            pg.execute("DROP INDEX events_subject_decided")  # migration 17's
            pg.execute("DROP TABLE lineage_written")  # migration 18's
            pg.execute("DROP TABLE intent_seconds")  # migration 19's
            pg.execute("DROP TABLE server_times")  # migration 20's
            pg.execute("DELETE FROM schema_migrations WHERE version >= 9")
        with pytest.raises(JournalError, match="schema version `8`"):
            open_journal(target)
        assert migrate(target) == [(9, "outcome-subject-index"), (10, "digest-key"),
                                   (11, "append-function"), (12, "approval-exclusions"),
                                   (13, "starting-runs"), (14, "unrun-approvals"),
                                   (15, "append-run-end-guard"), (16, "append-approval-guard"),
                                   (17, "decided-subject-index"), (18, "lineage-written"),
                                   (19, "server-seconds"), (20, "server-times")]
    else:
        import sqlite3

        conn = sqlite3.connect(target, isolation_level=None)
        conn.execute("DROP INDEX events_subject_outcome")
        conn.execute("DROP INDEX events_outcome")
        conn.execute("PRAGMA user_version = 7")
        conn.close()
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        again = rt.submit(_same_key("p-1"))
        assert again.replayed and again.action.id == first.action.id
        assert rt.journal.verify().intact
    if journal_backend == "sqlite":
        import sqlite3

        conn = sqlite3.connect(target)
        try:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == JOURNAL_FORMAT
            assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name IN "
                                "('events_subject_outcome', 'events_outcome')"
                                ).fetchone()[0] == 2
        finally:
            conn.close()


def test_a_kind_is_written_into_a_query_only_in_the_runtime_s_own_shape(
        home: Path) -> None:
    """The kind of a ``last_for_subject`` / ``subject_events`` read is written into the
    query's text (so that the partial indexes can serve it, and SQLite does not prepare it
    again at every run) only when it has the shape of the runtime's own kinds; anything
    else is bound as a parameter — a kind never becomes SQL."""
    odd = "run.outcome' OR '1'='1"
    assert last_for_subject_sql(odd, "seq", "?")[1] == (odd,)
    assert last_for_subject_sql("proposal.received", "seq", "?")[1] == ()
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        first = rt.submit(_same_key("p-0"))
        assert rt.journal.last_for_subject(first.action.id, odd) is None
        assert rt.journal.subject_events(first.action.id, odd, limit=5) == []
        assert rt.journal.last_for_subject(first.action.id, "run.outcome") is not None
        assert len(rt.journal.subject_events("p-0", "proposal.received", limit=5)) == 1
