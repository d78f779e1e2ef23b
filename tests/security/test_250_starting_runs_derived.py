"""The runs on their way to a human step are derived state: rebuilt, migrated, verified.

``test_249`` counts an agent's workflow runs between their start and their first
``human.requested`` in ``waiting_per_agent``, from the derived table ``starting_runs``
(run id, agent, the start's seq), kept in the append's own transaction. A journal written
before it holds such runs too: a SQLite journal of format 10 gets the table built from its
events when it is opened (format 11), a PostgreSQL journal at migration 12 is refused until
``db migrate`` applies migration 13, which derives it. ``audit verify`` re-derives the table
from the events and compares it row by row: a row deleted (a run no longer counted: one
more start let through) or forged (an agent's starts refused) is reported. Before, no such
table existed: a journal of format 10 was the newest, and nothing counted these runs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg.storage import NewEvent, open_journal

pytestmark = pytest.mark.usefixtures("journal_backend")

T0 = datetime(2026, 3, 1, tzinfo=UTC)
AGENT = "agent:a"
HUMAN = [["prepare", "tool"], ["review", "human"]]


def _ev(i: int, run: str, kind: str, payload: dict[str, object]) -> NewEvent:
    return NewEvent(run_id=run, kind=kind, subject=f"s:{run}:{i}", actor="cradle-kg/workflow",
                    at=T0 + timedelta(seconds=i), payload=payload)


def _start(i: int, run: str, *, agent: object = AGENT, steps: object = HUMAN) -> NewEvent:
    return _ev(i, run, "workflow.started", {"workflow": "w", "agent": agent, "steps": steps})


#: (run, what it is) — only ``run:on-its-way`` is a starting run
EVENTS = [
    _start(1, "run:on-its-way"),
    _start(2, "run:at-its-review"), _ev(3, "run:at-its-review", "human.requested",
                                        {"step": "review", "input_hash": "h"}),
    _start(4, "run:failed"), _ev(5, "run:failed", "workflow.failed", {"step": "prepare"}),
    _start(6, "run:completed"), _ev(7, "run:completed", "workflow.completed", {}),
    _start(8, "run:no-human", steps=[["prepare", "tool"]]),
    _start(9, "run:no-agent", agent=7),
    _start(10, "run:odd-steps", steps={"review": "human"}),
    _start(11, "run:other-agent", agent="agent:b"),
]
WANT = [("run:on-its-way", AGENT, 1), ("run:other-agent", "agent:b", 11)]


@pytest.fixture
def target(tmp_path: Path, journal_backend: str) -> str:
    import os

    from cradle_kg.storage import JOURNAL_URL_ENV

    return os.environ[JOURNAL_URL_ENV] if journal_backend == "postgresql" \
        else str(tmp_path / "journal.sqlite")


def _sql(target: str) -> Callable[[str], list[tuple[object, ...]]]:
    """Run one statement on the journal's database, outside the journal (as someone with
    the file or the database's password can)."""
    def run(sql: str) -> list[tuple[object, ...]]:
        if target.startswith("postgresql"):
            import psycopg

            with psycopg.connect(target, autocommit=True) as conn:
                cur = conn.execute(sql)
                return list(cur.fetchall()) if cur.description else []
        conn = sqlite3.connect(target, isolation_level=None)
        try:
            return list(conn.execute(sql).fetchall())
        finally:
            conn.close()
    return run


def _rows(sql: Callable[[str], list[tuple[object, ...]]]) -> list[tuple[object, ...]]:
    return [tuple(r) for r in sql("SELECT run_id, agent, seq FROM starting_runs ORDER BY run_id")]


def test_the_runs_on_their_way_are_kept_and_counted(target: str) -> None:
    with open_journal(target) as journal:
        journal.append(EVENTS)
        assert _rows(_sql(target)) == WANT
        # the run on its way, and the other run's open step
        assert journal.waiting(AGENT) == 2
        journal.append([_ev(12, "run:on-its-way", "human.requested",
                            {"step": "review", "input_hash": "h"})])
        assert _rows(_sql(target)) == WANT[1:]
        assert journal.waiting(AGENT) == 2  # its step counts instead: once
        assert journal.verify().intact


def test_a_tampered_row_is_reported(target: str) -> None:
    sql = _sql(target)
    with open_journal(target) as journal:
        journal.append(EVENTS)
        assert journal.verify().intact
        sql("DELETE FROM starting_runs WHERE run_id = 'run:on-its-way'")
        report = journal.verify()
        assert not report.intact and "starting_runs" in str(report.reason), report
        sql("INSERT INTO starting_runs(run_id, agent, seq) VALUES ('run:on-its-way', "
            "'agent:a', 1), ('run:at-its-review', 'agent:a', 2)")
        report = journal.verify()
        assert not report.intact and "starting_runs" in str(report.reason), report
        sql("DELETE FROM starting_runs WHERE run_id = 'run:at-its-review'")
        assert journal.verify().intact


def test_an_older_journal_gets_the_table_from_its_events(target: str) -> None:
    sql = _sql(target)
    with open_journal(target) as journal:
        journal.append(EVENTS)
    if target.startswith("postgresql"):
        from cradle_kg.errors import JournalError
        from cradle_kg.storage.pg_admin import migrate

        sql("DROP TABLE starting_runs, unrun_approvals")  # as migration 12 left it
        sql("DROP INDEX events_subject_decided")  # migration 17's
        sql("DROP TABLE lineage_written")  # migration 18's
        sql("DROP TABLE intent_seconds")  # migration 19's
        sql("DROP TABLE server_times")  # migration 20's
        sql("DELETE FROM schema_migrations WHERE version >= 13")
        with pytest.raises(JournalError, match="schema version `12`"):
            open_journal(target)
        assert migrate(target) == [(13, "starting-runs"), (14, "unrun-approvals"),
                                   (15, "append-run-end-guard"), (16, "append-approval-guard"),
                                   (17, "decided-subject-index"), (18, "lineage-written"),
                                   (19, "server-seconds"), (20, "server-times")]
    else:
        sql("DROP TABLE starting_runs")  # as a cradle-kg of format 10 left it
        sql("PRAGMA user_version = 10")
    with open_journal(target) as journal:
        assert _rows(sql) == WANT
        assert journal.waiting(AGENT) == 2
        assert journal.verify().intact
        journal.append([_ev(12, "run:on-its-way", "workflow.failed", {"step": "prepare"})])
        assert _rows(sql) == WANT[1:]
        assert journal.waiting(AGENT) == 1
        assert journal.verify().intact
    if not target.startswith("postgresql"):
        from cradle_kg.storage import JOURNAL_FORMAT

        assert sql("PRAGMA user_version") == [(JOURNAL_FORMAT,)]


def _asked(i: int, run: str, approval: str, by: str) -> NewEvent:
    return replace(_ev(i, run, "approval.requested",
                       {"approval": {"id": approval, "requested_by": by}}),
                   subject=f"approval:{approval}")


def test_a_run_waiting_on_its_agent_s_approval_counts_once(target: str) -> None:
    """A tool step whose proposal waits for an approval: the run is on its way to its
    human step *and* its agent's approval is undecided — counted once, by the approval.
    Another agent's approval in the run leaves it counted; decided, the run counts again
    (it goes on to its human step when walked on)."""
    with open_journal(target) as journal:
        journal.append([_start(1, "run:r"), _asked(2, "run:r", "ap-1", AGENT)])
        assert journal.waiting(AGENT) == 1  # before the exclusion: 2
        journal.append([_start(3, "run:s"), _asked(4, "run:s", "ap-2", "agent:b")])
        assert journal.waiting(AGENT) == 2  # run:s counts for agent:a, ap-2 for agent:b
        assert journal.waiting("agent:b") == 1
        journal.append([replace(_ev(5, "run:r", "approval.decided", {"approval_id": "ap-1"}),
                                subject="approval:ap-1")])
        assert journal.approval_requests(undecided=True, requested_by=AGENT, limit=0)[1] == 0
        assert journal.waiting(AGENT) == 2  # run:r on its way again, run:s
        assert journal.verify().intact
