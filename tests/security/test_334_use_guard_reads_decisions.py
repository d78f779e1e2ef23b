"""A use's guard read every other run's request of its action, under the writer's lock.

Finding (left by the last round): an intent under an approval is written only while no
revoke of the approval is in the journal (:class:`~cradle_kg.storage.ApprovalGuard`,
``tests/security/test_305``), probed under the journal's writer's lock
(:func:`~cradle_kg.storage.tasks_sql.approval_moved`, inside PostgreSQL's
``cradle_append`` since migration 16). The probe walked ``events_subject`` — every event
about the action after the approval's request, in any run — to find the revokes among
them. An agent asks for the same action in as many runs of its own as its waiting quota
allows: with 20,000 such requests a use cost 93 to 132 ms, every other writer waiting.

Now the probe plans through ``events_subject_decided (subject, seq) WHERE kind =
'approval.decided'`` (SQLite format 13, PostgreSQL migration 17): the action's decisions
only — a person's each, never an agent's request. Shown by the query plan, not timed (the
machine is shared): ``bench/bench_approval_guards.py --other-run-requests`` measures it.
An older journal gets the index in place (SQLite when opened, PostgreSQL by ``db
migrate``), and its revokes still stop their approval's uses.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus
from cradle_kg.storage import JOURNAL_FORMAT, JOURNAL_URL_ENV
from cradle_kg.storage.tasks_sql import approval_moved

from .mcp_http import MALLORY, two_agent_home
from .test_236_pending_key_asks_once import _close
from .test_304_revoke_an_approval import revoke

pytestmark = pytest.mark.usefixtures("journal_backend")

#: other runs' requests of the action (an agent asking again and again)
_ASKED = 40


def _approved_among_requests(rt: Runtime) -> str:
    """A reusable approval of run ``run:alice``, used once, then the action asked for in
    :data:`_ASKED` other runs by another agent; its id."""
    first = rt.submit(_close("p0", key="close-k0"))
    assert first.approval is not None
    rt.decide_approval(first.approval.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                       status=ApprovalStatus.APPROVED, once=False, resume=True)
    for n in range(_ASKED):
        asked = _close(f"m{n}", key=f"close-m{n}", run=f"run:other-{n}")
        asked["agent_id"] = MALLORY
        assert str(rt.submit(asked).status) == "awaiting_approval"
    used = rt.submit(_close("p1", key="close-k1"))  # under the approval, its guard probed
    assert str(used.status) == "executed", used
    return first.approval.id


def _plan(backend: str, target: str, approval_id: str) -> str:
    """The use's probe's query plan, as the journal runs it."""
    if backend == "postgresql":
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute("ANALYZE events")
            return " ".join(str(r[0]) for r in conn.execute(
                "EXPLAIN " + approval_moved("postgresql", revoking=False),
                (approval_id, approval_id)))
    import sqlite3

    conn = sqlite3.connect(target)
    try:
        return " ".join(str(r[3]) for r in conn.execute(
            "EXPLAIN QUERY PLAN " + approval_moved("sqlite", revoking=False),
            (approval_id, approval_id)))
    finally:
        conn.close()


def _target(rt: Runtime) -> str:
    return os.environ.get(JOURNAL_URL_ENV) or str(rt.journal.location)


def _stopped(rt: Runtime, approval_id: str) -> None:
    """Revoked: the action proposed again under the run asks a person anew."""
    assert revoke(rt, approval_id).status is ApprovalStatus.REVOKED
    again = rt.submit(_close("p2", key="close-k2"))
    assert str(again.status) == "awaiting_approval", again
    assert again.approval is not None and again.approval.id != approval_id


def test_a_use_s_guard_reads_the_action_s_decisions_not_its_requests(
        tmp_path: Path, journal_backend: str) -> None:
    """Before: SQLite ``SEARCH d USING INDEX events_subject (subject=? AND seq>?)``,
    PostgreSQL through ``events_subject`` (or ``events_kind``): every other run's request
    after the approval's."""
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        approval_id = _approved_among_requests(rt)
        plan = _plan(journal_backend, _target(rt), approval_id)
        if journal_backend == "postgresql":
            assert "using events_subject_decided" in plan.lower(), plan
        else:
            assert "USING INDEX events_subject_decided (subject=? AND seq>?)" in plan, plan
        _stopped(rt, approval_id)
        assert rt.journal.verify(semantics=True).intact


def test_an_older_journal_gets_the_index_and_its_revokes_still_stop_uses(
        tmp_path: Path, journal_backend: str) -> None:
    """A SQLite journal of format 12 gains the index when opened; a PostgreSQL journal at
    migration 16 is refused until ``db migrate`` (migration 17) builds it from the events
    there. A revoke written before the upgrade still stops its approval's uses."""
    home = two_agent_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        approval_id = _approved_among_requests(rt)
        target = _target(rt)
    _as_before_the_index(journal_backend, target)
    with Runtime(home, graph_sync=False) as rt:
        plan = _plan(journal_backend, target, approval_id)
        assert "events_subject_decided" in plan, plan
        _stopped(rt, approval_id)
        assert rt.journal.verify(semantics=True).intact
    if journal_backend == "sqlite":
        import sqlite3

        conn = sqlite3.connect(target)
        try:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == JOURNAL_FORMAT
        finally:
            conn.close()


def _as_before_the_index(backend: str, target: str) -> None:
    """The journal as a cradle-kg before the index left it (PostgreSQL: migrated)."""
    if backend == "postgresql":
        import psycopg

        from cradle_kg.errors import JournalError
        from cradle_kg.storage import open_journal
        from cradle_kg.storage.pg_admin import migrate

        with psycopg.connect(target, autocommit=True) as pg:
            pg.execute("DROP INDEX events_subject_decided")
            pg.execute("DROP TABLE lineage_written")  # and migration 18's
            pg.execute("DROP TABLE intent_seconds")  # migration 19's
            pg.execute("DROP TABLE server_times")  # migration 20's
            pg.execute("DELETE FROM schema_migrations WHERE version >= 17")
        with pytest.raises(JournalError, match="schema version `16`"):
            open_journal(target)
        assert migrate(target) == [(17, "decided-subject-index"), (18, "lineage-written"),
                                   (19, "server-seconds"), (20, "server-times")]
        return
    import sqlite3

    conn: Any = sqlite3.connect(target, isolation_level=None)
    try:
        conn.execute("DROP INDEX events_subject_decided")
        conn.execute("PRAGMA user_version = 12")
    finally:
        conn.close()
