"""The PostgreSQL journal's one-round-trip append (``cradle_append``, migration 11): the
server numbers and hashes the events under the append lock — the same hashes as
:func:`cradle_kg.storage.chain.event_hash`, the same typed refusals with nothing written,
the derived state of the seqs it chose — a journal migrated from version 10 with events in
it keeps verifying, and a rewritten function is caught."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from cradle_kg.errors import JournalError
from cradle_kg.storage import (
    ApprovalGuard,
    ApprovalMoved,
    IdempotencyKeyTaken,
    Journal,
    LimitReached,
    NewEvent,
    RunEnded,
    RunNotNew,
    SubjectMoved,
    UsageCap,
    open_journal,
)
from cradle_kg.storage.pg_admin import migrate
from cradle_kg.storage.pg_append import (
    APPROVAL_REVOKED,
    CALL_SQL,
    OLD_SIGNATURE,
    RUN_END_SIGNATURE,
    PendingSeq,
    bind_pending,
    call_args,
    function_sql,
)
from cradle_kg.storage.tasks_sql import OPENED, Decider

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOSTILE = 'é漢字🙂 "q" \\ \n\t \u2028 \x01'
#: what an array literal gives meaning to (the call's text arrays are written as literals)
ARRAY_SYNTAX = ('NULL', '{a,"b"}', " ,\\\\ ' ", "")


def ev(i: int, kind: str = "note", *, run: str = "run:a", subject: str | None = None,
       key: str | None = None, payload: dict[str, object] | None = None,
       if_last: int | None = None, if_new_run: bool = False,
       caps: tuple[UsageCap, ...] = (), if_run_open: bool = False,
       uses: str | None = None) -> NewEvent:
    return NewEvent(run_id=run, kind=kind, subject=subject or f"s:{i}", actor="agent:a",
                    at=T0 + timedelta(seconds=i), payload={"i": i, **(payload or {})},
                    idem_key=key, if_last=if_last, if_new_run=if_new_run, caps=caps,
                    if_run_open=if_run_open,
                    approval_guard=ApprovalGuard(uses, run) if uses is not None else None)


def test_the_server_hashes_hostile_text_as_the_chain_does(pg_url: str) -> None:
    events = [NewEvent(run_id=f"run:{HOSTILE}", kind=f"k.{HOSTILE}", subject=HOSTILE,
                       actor=HOSTILE, at=T0, payload={"t": HOSTILE}, idem_key=key)
              for key in (None, HOSTILE)]
    events += [NewEvent(run_id="run:x", kind="k", subject=text or "s", actor="agent:a", at=T0,
                        payload={"t": text}, idem_key=text or None) for text in ARRAY_SYNTAX]
    with open_journal(pg_url) as j:
        written = j.append(events)  # each server hash is checked against event_hash
        stored = list(j.events())
        assert [e.model_dump() for e in stored] == [e.model_dump() for e in written]
        assert j.verify().intact  # every hash computed again here, in Python


def test_ids_past_ten_digits_are_written_as_the_chain_writes_them(pg_url: str) -> None:
    """``evt-%010d``: ten digits, zero-padded, more when the seq has more."""
    with open_journal(pg_url) as j:
        j.append([ev(1)])
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE head SET seq = 9999999998")
        written = j.append([ev(2), ev(3), ev(4)])  # hashes checked against event_hash
    assert [e.id for e in written] == ["evt-9999999999", "evt-10000000000",
                                       "evt-10000000001"]


def test_a_moved_subject_is_refused_with_nothing_written(pg_url: str) -> None:
    with open_journal(pg_url) as j:
        j.append([ev(1, subject="s:x"), ev(2, subject="s:y")])
        head = j.head()
        with pytest.raises(SubjectMoved) as moved:
            j.append([ev(3, subject="s:x", if_last=1), ev(4, subject="s:y", if_last=1)])
        assert moved.value.subject == "s:y"  # the first guard that failed, in order
        assert j.head() == head
        written = j.append([ev(5, subject="s:y", if_last=2)])
        assert written[0].seq == 3
        assert j.verify().intact


def test_a_begun_run_is_refused_with_nothing_written(pg_url: str) -> None:
    with open_journal(pg_url) as j:
        j.append([ev(1, run="run:b")])
        head = j.head()
        with pytest.raises(RunNotNew) as taken:
            j.append([ev(2, run="run:new", if_new_run=True),
                      ev(3, run="run:b", if_new_run=True)])
        assert taken.value.run_id == "run:b"
        with pytest.raises(RunNotNew) as twice:  # begun earlier in the same append
            j.append([ev(4, run="run:c"), ev(5, run="run:c", if_new_run=True)])
        assert twice.value.run_id == "run:c"
        assert j.head() == head
        assert j.append([ev(6, run="run:new", if_new_run=True)])[0].seq == 2
        assert j.verify().intact


def test_a_taken_key_is_refused_with_nothing_written(pg_url: str) -> None:
    with open_journal(pg_url) as j:
        j.append([ev(1, "action.intent", subject="action:a", key="k1")])
        head = j.head()
        with pytest.raises(IdempotencyKeyTaken) as taken:
            j.append([ev(2, "approval.requested", subject="approval:z"),
                      ev(3, "action.intent", subject="action:b", key="k1")])
        assert taken.value.key == "k1"
        assert j.head() == head
        assert j.approval_subjects() == []  # the derived state of the refused append too
        assert j.verify().intact


def test_a_capped_append_still_decides_its_limit(pg_url: str) -> None:
    """Caps take the two-round-trip path; both paths chain onto each other."""
    cap = UsageCap(scope="*", subject="", since=T0, max_calls=1)
    with open_journal(pg_url) as j:
        j.append([ev(1, "action.intent", subject="action:a", key="k1", caps=(cap,))])
        j.append([ev(2, "run.outcome", subject="action:a")])
        with pytest.raises(LimitReached):
            j.append([ev(3, "action.intent", subject="action:b", key="k2", caps=(cap,))])
        assert j.head()[0] == 2
        assert j.verify().intact


def test_a_journal_whose_head_went_back_gets_its_runs_rows(pg_url: str) -> None:
    """A journal object that committed a run's row leaves it out of later appends of that
    run; if another journal now stands at the place (its head behind the one last seen),
    the server refuses the append that left it out, and it is made again with the row."""
    with open_journal(pg_url) as j:
        j.append([ev(1, "proposal.received", run="run:r"), ev(2, run="run:r")])
        with psycopg.connect(pg_url, autocommit=True) as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "AND tablename <> 'schema_migrations'")]
            conn.execute(f"TRUNCATE {', '.join(tables)}")
        written = j.append([ev(3, run="run:r")])  # counts no proposal: its row was left out
        assert written[0].seq == 1
        assert j.verify().intact  # the runs row is there, as the events derive it


def test_a_journal_at_version_10_with_events_is_migrated_and_verifies(pg_url: str) -> None:
    with open_journal(pg_url) as j:
        before = j.append([ev(1, "proposal.received"), ev(2, "action.intent", key="k1"),
                           ev(3, "approval.requested", payload={"approval": {"id": "ap"}})])
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as a cradle-kg before it left it
        conn.execute("DROP FUNCTION cradle_append")
        conn.execute("DROP TABLE approval_exclusions")  # and migration 12's, after it
        conn.execute("DROP TABLE starting_runs, unrun_approvals")  # and 13's, 14's
        conn.execute("DROP INDEX events_subject_decided")  # and 17's
        conn.execute("DROP TABLE lineage_written")  # and 18's
        conn.execute("DROP TABLE intent_seconds")  # migration 19's
        conn.execute("DROP TABLE server_times")  # migration 20's
        conn.execute("DELETE FROM schema_migrations WHERE version >= 11")
    with pytest.raises(JournalError, match="schema version `10`"):
        open_journal(pg_url)
    assert migrate(pg_url) == [(11, "append-function"), (12, "approval-exclusions"),
                               (13, "starting-runs"), (14, "unrun-approvals"),
                               (15, "append-run-end-guard"), (16, "append-approval-guard"),
                               (17, "decided-subject-index"), (18, "lineage-written"),
                               (19, "server-seconds"), (20, "server-times")]
    with open_journal(pg_url) as j:
        assert j.verify().intact
        after = j.append([ev(4, "run.outcome", subject="s:2"),
                          ev(5, OPENED, payload={"task_id": "t"})])
        assert after[0].prev_hash == before[-1].hash
        assert [e.seq for e in after] == [4, 5]
        assert j.verify().intact


def test_a_journal_at_version_11_gets_its_approval_exclusions(pg_url: str) -> None:
    """Migration 12 derives who may never decide each approval from the requests already
    written (``tests/security/test_215``); an approver's inbox leaves them out."""
    excluded = {"approval": {"id": "ap"}, "excluded": ["agent:a", "user:alice", 7]}
    with open_journal(pg_url) as j:
        j.append([ev(1, "approval.requested", payload=excluded)])
        assert j.approval_requests(undecided=True, decider=Decider("user:alice"))[1] == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as a cradle-kg before it left it
        conn.execute("DROP TABLE approval_exclusions, starting_runs, "
                     "unrun_approvals")  # and 13's, 14's
        conn.execute("DROP INDEX events_subject_decided")  # and 17's
        conn.execute("DROP TABLE lineage_written")  # and 18's
        conn.execute("DROP TABLE intent_seconds")  # migration 19's
        conn.execute("DROP TABLE server_times")  # migration 20's
        conn.execute("DELETE FROM schema_migrations WHERE version >= 12")
    with pytest.raises(JournalError, match="schema version `11`"):
        open_journal(pg_url)
    assert migrate(pg_url) == [(12, "approval-exclusions"), (13, "starting-runs"),
                               (14, "unrun-approvals"),
                               (15, "append-run-end-guard"), (16, "append-approval-guard"),
                               (17, "decided-subject-index"), (18, "lineage-written"),
                               (19, "server-seconds"), (20, "server-times")]
    with open_journal(pg_url) as j, psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT approval_id, who FROM approval_exclusions "
                            "ORDER BY who").fetchall()
        assert rows == [("ap", "agent:a"), ("ap", "user:alice")]  # the number is no one
        assert j.approval_requests(undecided=True, decider=Decider("user:alice"))[1] == 0
        assert j.approval_requests(undecided=True, decider=Decider("user:bob"))[1] == 1
        assert j.verify().intact
        conn.execute("DELETE FROM approval_exclusions WHERE who = 'user:alice'")
        conn.commit()
        report = j.verify()
        assert not report.intact and "approval_exclusions" in str(report.reason)


def test_a_rewritten_append_function_is_caught(pg_url: str) -> None:
    """Rewritten while a journal is open: its next append is refused before it commits
    (``tests/security/test_350``), and ``audit verify`` names the function."""
    with open_journal(pg_url) as j:
        j.append([ev(1)])
        assert j.verify().intact
        head = j.head()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            (body,) = conn.execute(
                "SELECT pg_get_functiondef('cradle_append'::regproc)").fetchone()
            conn.execute(body.replace("'sha256:' || encode", "'sha256:' || md5('x') || encode"))
        report = j.verify()
        assert not report.intact and "function `cradle_append` was altered" in str(
            report.reason)
        with pytest.raises(JournalError, match="`cradle_append` was altered"):
            j.append([ev(2)])
        assert j.head() == head


def test_pending_seqs_are_written_as_the_head_less_the_later_events() -> None:
    sql, args = bind_pending("INSERT INTO t(a, b, c) VALUES (%s, %s, %s) -- 100%%",
                             ("x", PendingSeq(2), 7), 3)
    assert sql == ("INSERT INTO t(a, b, c) VALUES (%s, ((SELECT h.seq FROM head h WHERE "
                   "h.one = 1) - %s::bigint), %s) -- 100%%")
    assert args == ("x", 1, 7) and type(args[2]) is int
    plain = ("SELECT %(a)s", {"a": 1})
    assert bind_pending(*plain, 3) == plain
    with pytest.raises(ValueError, match="placeholders"):
        bind_pending("SELECT %s", (PendingSeq(1), 2), 1)


def _run_end_guard_holds(j: Journal) -> None:
    """An ``if_run_open`` append: written while its run is open, refused (nothing written)
    once the run has ended in the journal or earlier in the same append."""
    j.append([ev(1, "workflow.started", run="run:w"), ev(2, "workflow.started", run="run:v")])
    j.append([ev(3, run="run:w", if_run_open=True), ev(4, run="run:v", if_run_open=True)])
    j.append([ev(5, "workflow.failed", run="run:w")])
    head = j.head()
    with pytest.raises(RunEnded) as ended:  # the second of the append's runs has ended
        j.append([ev(6, run="run:v", if_run_open=True), ev(7, run="run:w", if_run_open=True)])
    assert ended.value.run_id == "run:w"
    with pytest.raises(RunEnded) as ended:  # ended by the append itself, before the event
        j.append([ev(8, "workflow.completed", run="run:v"),
                  ev(9, run="run:v", if_run_open=True)])
    assert ended.value.run_id == "run:v"
    assert j.head() == head
    j.append([ev(10, run="run:w")])  # what follows a run's end unguarded is still written
    assert j.verify().intact


def test_an_if_run_open_append_is_refused_by_the_function(pg_url: str) -> None:
    """Migration 15: ``cradle_append`` reads the run's end under its lock (one round trip)."""
    with open_journal(pg_url) as j:
        _run_end_guard_holds(j)


def _approval_guard_holds(j: Journal) -> None:
    """An intent under an approval: written while no revoke of it is in the journal,
    refused (nothing written, :class:`ApprovalMoved` naming it) once one is."""
    for name in ("ap", "aq"):
        j.append([ev(0, "approval.requested", subject=f"approval:{name}",
                     payload={"approval": {"id": name}})])
    j.append([ev(1, "action.intent", uses="ap"), ev(2, "action.intent", uses="aq")])
    j.append([ev(3, "approval.decided", subject="approval:aq",
                 payload={"approval_id": "aq", "status": "revoked"})])
    head = j.head()
    with pytest.raises(ApprovalMoved) as moved:  # the second of the append's approvals
        j.append([ev(4, "action.intent", uses="ap"), ev(5, "action.intent", uses="aq")])
    assert moved.value.guard.approval_id == "aq"
    assert j.head() == head
    j.append([ev(6, "action.intent", uses="ap")])  # the other one still serves
    assert j.verify().intact


def test_an_intent_under_a_revoked_approval_is_refused_by_the_function(pg_url: str) -> None:
    """Migration 16: ``cradle_append`` itself reads an approval's revoke under its lock —
    called as the journal calls it, it raises its SQLSTATE and writes nothing."""
    with open_journal(pg_url) as j:
        _approval_guard_holds(j)
        head = j.head()
    row = ("run:a", "action.intent", "s:9", "agent:a", "2026-01-01T00:00:09+00:00", "{}",
           "sha256:x", None, b"", b"", b"", b"")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for used, refused in ((["ap"], False), (["ap", "aq"], True)):
            with conn.transaction(force_rollback=True):
                if not refused:
                    conn.execute(CALL_SQL, call_args([row], [], [], [], used, 0, "c"))
                    continue
                with pytest.raises(psycopg.Error) as failed:
                    conn.execute(CALL_SQL, call_args([row], [], [], [], used, 0, "c"))
                assert failed.value.sqlstate == APPROVAL_REVOKED
                assert failed.value.diag.message_detail == "2"
    with open_journal(pg_url) as j:
        assert j.head() == head and j.verify().intact


#: a journal left by an older cradle-kg: its version, the function it had (as
#: :func:`function_sql` writes it), that function's signature, the migrations that follow
OLDER_FUNCTIONS = {
    14: ({"run_end": False}, OLD_SIGNATURE,
         [(15, "append-run-end-guard"), (16, "append-approval-guard"),
          (17, "decided-subject-index"), (18, "lineage-written"), (19, "server-seconds"),
          (20, "server-times")]),
    15: ({"run_end": True}, RUN_END_SIGNATURE,
         [(16, "append-approval-guard"), (17, "decided-subject-index"),
          (18, "lineage-written"), (19, "server-seconds"), (20, "server-times")]),
}


@pytest.mark.parametrize("version", sorted(OLDER_FUNCTIONS))
def test_an_older_append_function_is_replaced_in_place(pg_url: str, version: int) -> None:
    """A journal whose ``cradle_append`` is migration 11's (no run-end guard: version 14)
    or 15's (the approval's revoke probed in a first round trip) is migrated in place: the
    old function is dropped, the guards hold, the chain verifies."""
    made, signature, migrations = OLDER_FUNCTIONS[version]
    with open_journal(pg_url) as j:
        j.append([ev(0, run="run:x")])
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as a cradle-kg before it left it
        conn.execute("DROP FUNCTION cradle_append")
        conn.execute(function_sql(**made))
        assert conn.execute("SELECT count(*) FROM pg_proc WHERE oid = %s::regprocedure",
                            (signature,)).fetchone() == (1,)
        conn.execute("DROP INDEX events_subject_decided")  # migration 17's
        conn.execute("DROP TABLE lineage_written")  # migration 18's
        conn.execute("DROP TABLE intent_seconds")  # migration 19's
        conn.execute("DROP TABLE server_times")  # migration 20's
        conn.execute("DELETE FROM schema_migrations WHERE version > %s", (version,))
    with pytest.raises(JournalError, match=f"schema version `{version}`"):
        open_journal(pg_url)
    assert migrate(pg_url) == migrations
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'cradle_append' "
                            "AND pronamespace = current_schema()::regnamespace"
                            ).fetchone() == (1,)
    with open_journal(pg_url) as j:
        assert j.verify().intact
        _run_end_guard_holds(j)
        _approval_guard_holds(j)
