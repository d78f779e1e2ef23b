"""The journal contract, run on both backends (the embedded SQLite file and a real
PostgreSQL server): the same events get the same hashes byte for byte, a key is claimed
once, a batch is all or none, every read and every piece of derived state agrees, leases
die with their process, appends from many processes chain without a gap."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg.errors import JournalError
from cradle_kg.storage import (
    GENESIS_HASH,
    IdempotencyKeyTaken,
    Journal,
    NewEvent,
    RunNotNew,
    SqliteJournal,
    SubjectMoved,
    open_journal,
    tasks_sql,
)
from tests.racers import racer, racing_context

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def ev(i: int, kind: str = "note", *, run: str = "run:a", subject: str | None = None,
       key: str | None = None, **payload: object) -> NewEvent:
    return NewEvent(run_id=run, kind=kind, subject=subject or f"s:{i}", actor="agent:a",
                    at=T0 + timedelta(seconds=i), payload={"i": i, **payload}, idem_key=key)


#: a little of everything the derived tables read
SCRIPT = [
    ev(1, "proposal.received", subject="proposal:p1"),
    ev(2, "action.intent", subject="action:a1", key="k1", cost=2.5, agent="agent:a",
       task_id="t1", tenant="acme"),
    ev(3, "approval.requested", subject="approval:d1", approval={"id": "ap-1"}),
    ev(4, "action.intent", subject="action:a2", key="k2", cost=1, agent="agent:b"),
    ev(5, "run.outcome", subject="action:a1",
       outcome={"proposal_id": "p1", "status": "executed"}),
    ev(6, "proposal.received", run="run:b", subject="proposal:p2", text="é ✓ \u0000 nul"),
]


def test_same_events_same_hashes_on_both_backends(tmp_path: Path, pg_url: str) -> None:
    with SqliteJournal(tmp_path / "j.sqlite") as a, open_journal(pg_url) as b:
        ha = [e.hash for e in a.append(SCRIPT)]
        hb = [e.hash for e in b.append(SCRIPT)]
        assert ha == hb
        assert a.head() == b.head() == (len(SCRIPT), ha[-1])
        assert [e.model_dump() for e in a.events()] == [e.model_dump() for e in b.events()]
        assert a.claimed_keys() == b.claimed_keys() == {2: "k1", 4: "k2"}


def test_an_empty_journal_has_the_genesis_head(journal: Journal) -> None:
    assert journal.head() == (0, GENESIS_HASH)
    assert list(journal.events()) == []
    assert journal.verify().intact is False  # no genesis event: nothing to vouch for


def test_reads_by_sequence_run_subject_kind(journal: Journal) -> None:
    written = journal.append(SCRIPT)
    assert [e.seq for e in written] == [1, 2, 3, 4, 5, 6]
    assert written[0].prev_hash == GENESIS_HASH
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(written))
    assert [e.seq for e in journal.events(since_seq=4)] == [5, 6]
    assert [e.seq for e in journal.events(batch=2)] == [1, 2, 3, 4, 5, 6]
    assert [e.seq for e in journal.events(run_id="run:b")] == [6]
    assert [e.seq for e in journal.events_for_subject("action:a1")] == [2, 5]
    assert [e.seq for e in journal.events_of_kind("action.intent")] == [2, 4]
    assert journal.last_of_kind("proposal.received").seq == 6  # type: ignore[union-attr]
    assert journal.intent_for_key("k2").seq == 4  # type: ignore[union-attr]
    assert journal.event_for_key("nope") is None
    assert journal.latest_outcome("run:a", "p1").seq == 5  # type: ignore[union-attr]
    assert journal.latest_outcome("run:a", "p9") is None
    assert journal.events_for_subject("proposal:p2")[0].payload["text"] == "é ✓ \u0000 nul"


def test_a_runs_agent_is_its_first_proposals(journal: Journal) -> None:
    """``run_agent``: the actor of the run's first ``proposal.received`` or ``run.claimed``
    (what the entry points that speak for an agent check before they journal anything in a
    run)."""
    assert journal.run_agent("run:a") is None
    journal.append([NewEvent(run_id="run:a", kind="input.recorded", subject="s", actor="user:u",
                             at=T0, payload={})])
    assert journal.run_agent("run:a") is None  # no proposal yet: nobody's
    journal.append([NewEvent(run_id="run:a", kind="proposal.received", subject="p1",
                             actor="agent:first", at=T0, payload={}),
                    NewEvent(run_id="run:b", kind="proposal.received", subject="p2",
                             actor="agent:other", at=T0, payload={})])
    journal.append([NewEvent(run_id="run:a", kind="proposal.received", subject="p3",
                             actor="agent:second", at=T0, payload={})])
    assert journal.run_agent("run:a") == "agent:first"
    assert journal.run_agent("run:b") == "agent:other"
    assert journal.run_agent("run:none") is None
    # an entry point's claim of a new run counts as its first proposal would
    journal.append([NewEvent(run_id="run:c", kind="run.claimed", subject="run:c",
                             actor="agent:claimer", at=T0, payload={},
                             idem_key="run-claim:run:c")])
    journal.append([NewEvent(run_id="run:c", kind="proposal.received", subject="p4",
                             actor="agent:later", at=T0, payload={})])
    assert journal.run_agent("run:c") == "agent:claimer"


def test_derived_state_follows_the_appends(journal: Journal) -> None:
    journal.append(SCRIPT)
    assert journal.dangling_intents() == [(4, "action:a2")]
    assert journal.usage_since(field=None, value=None, since=T0) == (2, 3.5)
    assert journal.usage_since(field="agent", value="agent:a", since=T0) == (1, 2.5)
    assert journal.usage_since(field="tenant", value="acme", since=T0) == (1, 2.5)
    assert journal.usage_since(field=None, value=None, since=T0 + timedelta(seconds=3)) == (1, 1.0)
    assert journal.approval_place("ap-1")[0] == "approval:d1"
    assert journal.approval_place("ap-9") is None
    assert journal.approval_subjects() == ["approval:d1"]
    assert journal.run_ids() == ["run:a", "run:b"]
    assert journal.has_run("run:b") and not journal.has_run("run:c")
    assert journal.proposal_runs() == (["run:a", "run:b"], 2)
    assert journal.proposal_runs(limit=1, newest_first=True) == (["run:b"], 2)
    assert journal.verify().intact


def _derived_rows(journal: Journal) -> dict[str, tuple[list[tuple[object, ...]], ...]]:
    """Per derived table: its stored rows and the same rows computed from the events."""
    from cradle_kg.storage import pg_schema, sqlite_derived

    read = journal._query  # type: ignore[attr-defined]
    if isinstance(journal, SqliteJournal):
        return {d.table: (read(d.stored()), read(d.from_events))
                for d in sqlite_derived.DERIVATIONS}
    return {table: (read(stored), read(derived))
            for table, stored, derived in pg_schema.DERIVATIONS}


def test_multi_event_appends_keep_every_derived_row_equal_to_a_rederivation(
        journal: Journal) -> None:
    """The derived rows an append writes once for all its events (``runs``: one upsert per
    append; on PostgreSQL the events in one INSERT, an intent's scopes in one upsert) equal
    those computed from the events: runs met again keep their first seq and add their
    proposals, several runs in one append, an intent closed in its own append or a later
    one, people's events."""
    journal.append([
        ev(1, "proposal.received", subject="proposal:p1"),
        ev(2, "action.intent", subject="action:a1", cost=2, agent="agent:a", tenant="t"),
        ev(3, "run.outcome", subject="action:a1",
           outcome={"proposal_id": "p1", "status": "executed"}),
        ev(4, "proposal.received", run="run:b", subject="proposal:p2"),
        ev(5, "proposal.received", subject="proposal:p3"),
        ev(6, "action.intent", run="run:b", subject="action:b1", cost=1, agent="agent:a"),
        ev(6, "action.intent", subject="action:a2", agent="agent:a", task_id="k"),
    ])
    journal.append([
        ev(7, "human_task.opened", run="run:b", subject="task:1", task_id="x"),
        ev(8, "run.outcome", run="run:b", subject="action:b1",
           outcome={"proposal_id": "p2", "status": "executed"}),
        ev(9, "proposal.received", run="run:b", subject="proposal:p4"),
        ev(9, "note", run="run:c", subject="s:c"),
        ev(10, "run.outcome", run="run:b", subject="action:b9",
           outcome={"proposal_id": "p4", "status": "denied"}),
    ])
    journal.append([ev(11, "proposal.received", subject="proposal:p5"),
                    ev(12, "run.outcome", subject="action:a2",
                       outcome={"proposal_id": "p5", "status": "executed"}),
                    ev(13, "action.intent", subject="action:a3", agent="agent:a")])
    rows = _derived_rows(journal)
    for table, (stored, derived) in rows.items():
        assert [tuple(r) for r in stored] == [tuple(r) for r in derived], table
    assert [tuple(r) for r in rows["runs"][0]] == [
        ("run:a", 1, 3), ("run:b", 4, 2), ("run:c", 11, 0)]
    assert journal.dangling_intents() == [(15, "action:a3")]
    assert [tuple(r) for r in rows["run_state"][0]] == [
        ("run:a", "p5", "executed", 0, 0, 0, None), ("run:b", "p4", "denied", 1, 0, 0, None)]
    assert journal.usage_since(field="agent", value="agent:a", since=T0) == (4, 3.0)
    assert journal.usage_since(field=None, value=None, since=T0 + timedelta(seconds=6)) == (3, 1.0)
    assert journal.run_ids() == ["run:a", "run:b", "run:c"]
    assert journal.proposal_runs() == (["run:a", "run:b"], 2)
    assert journal.verify().intact


def test_a_window_reads_running_totals_that_hold_in_any_order_of_arrival(
        journal: Journal) -> None:
    """Intents dated out of order (two processes' clocks) and two in one second: every
    window still counts exactly the seconds it covers, and verify re-derives the totals."""
    for n, (second, cost) in enumerate([(5, 1.0), (1, 2.0), (3, 4.0), (3, 8.0), (0, 0.25)]):
        journal.append([ev(second, "action.intent", subject=f"action:o{n}", cost=cost,
                           agent="agent:x")])
    want = {0: (5, 15.25), 1: (4, 15.0), 2: (3, 13.0), 4: (1, 1.0), 6: (0, 0.0)}
    for since, counted in want.items():
        at = T0 + timedelta(seconds=since)
        assert journal.usage_since(field="agent", value="agent:x", since=at) == counted
        assert journal.usage_since(field=None, value=None, since=at) == counted
    assert journal.verify().intact


def test_a_key_is_claimed_once_and_a_batch_is_all_or_none(journal: Journal) -> None:
    journal.append([ev(1, "action.intent", key="k")])
    head = journal.head()
    with pytest.raises(IdempotencyKeyTaken) as taken:
        journal.append([ev(2), ev(3, "action.intent", key="k")])
    assert taken.value.key == "k"
    assert journal.head() == head and [e.seq for e in journal.events()] == [1]
    with pytest.raises(IdempotencyKeyTaken):  # a duplicate within one batch
        journal.append([ev(4, "action.intent", key="x"), ev(5, "action.intent", key="x")])
    assert journal.head() == head and journal.dangling_intents() == [(1, "s:1")]
    assert journal.verify().intact


def test_an_if_new_run_event_is_written_only_as_its_runs_first(journal: Journal,
                                                               tmp_path: Path) -> None:
    """``if_new_run`` (a workflow's start, an agent's claim: ``tests/security/test_44``):
    refused, nothing of the append written, when its run has an event — in the journal or
    earlier in the same append; checked, never stored: the events' hashes are those the
    same events have without it."""
    def new(event: NewEvent) -> NewEvent:
        return replace(event, if_new_run=True)

    plain = [ev(1, "workflow.started", run="run:w"), ev(2, run="run:w"),
             ev(3, run="run:x"), ev(4, "run.claimed", run="run:y", key="run-claim:run:y")]
    written = journal.append([new(plain[0]), plain[1], new(plain[2]), new(plain[3])])
    with SqliteJournal(tmp_path / "plain.sqlite") as unguarded:
        assert [e.hash for e in written] == [e.hash for e in unguarded.append(plain)]
    head = journal.head()
    for refused, run in (([ev(5), new(ev(6, "run.claimed", run="run:w"))], "run:w"),
                         ([ev(7, run="run:z"), new(ev(8, run="run:z"))], "run:z"),
                         ([new(ev(9, run="run:v")), new(ev(10, run="run:v"))], "run:v")):
        with pytest.raises(RunNotNew) as begun:
            journal.append(refused)
        assert begun.value.run_id == run
        assert journal.head() == head
    assert not journal.has_run("run:z") and not journal.has_run("run:v")
    assert journal.verify().intact


def test_an_if_last_event_is_written_only_over_its_subjects_latest(journal: Journal) -> None:
    """``if_last`` (a worker's fencing token: ``LoopContext.append_fenced``): the append is
    refused, nothing of it written, unless the subject's latest event is the one named
    (0: none yet) — several guarded events, of one subject or of two, in one append; the
    head and these seqs are read in one statement under the append's lock."""
    def at(event: NewEvent, last: int) -> NewEvent:
        return replace(event, if_last=last)

    assert [e.seq for e in journal.append([at(ev(1, subject="s:a"), 0)])] == [1]
    journal.append([ev(2, subject="s:b")])
    written = journal.append([at(ev(3, subject="s:a"), 1), at(ev(4, subject="s:b"), 2),
                              at(ev(5, subject="s:a"), 1)])
    assert [e.seq for e in written] == [3, 4, 5]
    head = journal.head()
    for refused, moved in (([at(ev(6, subject="s:a"), 3)], "s:a"),
                           ([ev(7), at(ev(8, subject="s:b"), 2)], "s:b"),
                           ([at(ev(9, subject="s:c"), 1)], "s:c")):
        with pytest.raises(SubjectMoved) as raised:
            journal.append(refused)
        assert raised.value.subject == moved
        assert journal.head() == head
    assert [e.seq for e in journal.append([at(ev(10, subject="s:a"), 5)])] == [6]
    assert journal.verify().intact


def test_the_watermark_moves_only_for_other_writers(target: str) -> None:
    with open_journal(target) as mine, open_journal(target) as other:
        mine.append([ev(1)])
        w = mine.watermark()
        mine.append([ev(2)])
        assert mine.watermark() == w  # my own append
        other.append([ev(3)])
        assert mine.watermark() != w
        w = mine.watermark()
        other.append([ev(4)])
        mine.append([ev(5)])  # another's append seen under my append's lock still counts
        assert mine.watermark() != w


def test_leases_are_alive_while_held_and_dead_after(journal: Journal) -> None:
    lease = journal.acquire_lease()
    assert journal.worker_alive(lease.id)
    assert not journal.worker_alive("w-0000000000000000")
    assert not journal.worker_alive("not-a-worker-id")
    lease.release()
    assert not journal.worker_alive(lease.id)


def test_a_lease_session_has_the_servers_keepalive(pg_url: str) -> None:
    """The server drops a dead host's lease after its own TCP keepalive: set on the lease's
    session (the client's keepalive does not make the server notice; the server's default
    is the OS's, two hours)."""
    from cradle_kg.storage.postgresql import LEASE_KEEPALIVES

    with open_journal(pg_url) as j:
        lease = j.acquire_lease()
        try:
            conn = lease._conn  # type: ignore[attr-defined]
            for setting, value in LEASE_KEEPALIVES:
                assert conn.execute(f"SHOW {setting}").fetchone()[0] == str(value), setting
            assert conn.info.host.startswith("127."), "over TCP: the settings take effect"
        finally:
            lease.release()


def test_a_lease_whose_session_the_server_ended_is_not_held(pg_url: str) -> None:
    """``held`` reads the lease session's socket: idle, nothing to read, held; once the
    server ends the session (its FATAL arrives, the socket closes), not held."""
    import psycopg

    with open_journal(pg_url) as j:
        lease = j.acquire_lease()
        try:
            assert lease.held() and lease.held()
            pid = lease._conn.info.backend_pid  # type: ignore[attr-defined]
            with psycopg.connect(pg_url, autocommit=True) as admin:
                assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
            deadline = time.monotonic() + 10
            while lease.held() and time.monotonic() < deadline:
                time.sleep(0.05)  # the FATAL is on its way
            assert not lease.held()
            assert not j.worker_alive(lease.id)
        finally:
            lease.release()


_HOLD = """
import sys, time
from cradle_kg.storage import open_journal
j = open_journal(sys.argv[1])
lease = j.acquire_lease()
print(lease.id, flush=True)
time.sleep(600)
"""


def test_a_killed_workers_lease_is_dead(target: str, journal: Journal) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, target], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        worker = proc.stdout.readline().strip()
        assert journal.worker_alive(worker)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while journal.worker_alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)  # the server notices the closed socket
    assert not journal.worker_alive(worker)


def test_exclusive_is_held_by_one_at_a_time(target: str) -> None:
    with open_journal(target) as a, open_journal(target) as b:
        inside: list[str] = []
        started = threading.Event()

        def second() -> None:
            started.set()
            with b.exclusive("recovery"):
                inside.append("b")

        with a.exclusive("recovery"):
            t = threading.Thread(target=second)
            t.start()
            started.wait()
            time.sleep(0.3)
            assert inside == []  # b waits for a
            inside.append("a")
        t.join(10)
        assert inside == ["a", "b"]


def _writer(target: str, n: int, tag: str) -> None:
    with open_journal(target) as j:
        for i in range(n):
            j.append([ev(i, subject=f"{tag}:{i}"), ev(i, "action.intent", subject=f"{tag}:{i}",
                                                        key=f"{tag}-{i}")])


def test_appends_from_many_processes_chain_without_a_gap(target: str, journal: Journal) -> None:
    journal.append([ev(0)])  # create the schema before the writers race
    ctx = racing_context()
    procs = [racer(ctx, _writer, target, 15, f"p{n}") for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    report = journal.verify()
    assert report.intact and report.events == 1 + 4 * 15 * 2
    assert len(journal.dangling_intents()) == 60


def test_postgres_refuses_an_unmigrated_database(postgres: object) -> None:
    from cradle_kg.storage.pg_admin import migrate, status
    from cradle_kg.storage.pg_scratch import ScratchPostgres

    assert isinstance(postgres, ScratchPostgres)
    url = postgres.create_database()
    try:
        with pytest.raises(JournalError, match="schema version `0`") as refused:
            open_journal(url)
        assert "cradle-kg db migrate" in str(refused.value.hint)
        assert status(url).pending and not status(url).applied
        assert migrate(url) and migrate(url) == []  # applied once
        assert status(url).pending == [] and status(url).events == 0
        with open_journal(url) as j:
            assert j.head() == (0, GENESIS_HASH)
    finally:
        postgres.drop_database(url)


#: the derived tables migration 8 adds, and migration 12's, 13's and 14's (dropped with them to
#: make an older journal)
TABLES_8 = tasks_sql.TABLES


def test_a_journal_at_migration_3_gets_the_outcome_index(pg_url: str) -> None:
    """Migration 4 indexes a run's outcomes by proposal id: a journal written before it
    is refused until migrated, then finds a proposal's last outcome in one index probe
    (not through the run's events), the same event as before, and stays intact."""
    import psycopg

    from cradle_kg.storage import pg_schema
    from cradle_kg.storage.pg_admin import migrate

    with open_journal(pg_url) as j:
        j.append(SCRIPT)
        j.append([ev(7, "run.outcome", subject="action:a1",
                     outcome={"proposal_id": "p1", "status": "denied"}),
                  ev(8, "run.outcome", subject="action:a1", submission="other content",
                     outcome={"proposal_id": "p1", "status": "denied"})])
        before = j.latest_outcome("run:a", "p1")
    assert before is not None and before.seq == 7  # a refused reuse of the id is not it
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP INDEX events_outcome")
        conn.execute("DROP INDEX events_kind_actor")  # migration 7's
        conn.execute(f"DROP TABLE {', '.join(TABLES_8)}")  # migration 8's
        conn.execute("DROP INDEX approval_ids_seq")
        conn.execute("DROP INDEX events_subject_outcome")  # migration 9's
        conn.execute("DROP TABLE journal_keys")  # migration 10's
        conn.execute("DROP FUNCTION cradle_append")  # migration 11's
        conn.execute("DROP INDEX events_subject_decided")  # migration 17's
        conn.execute("DROP TABLE lineage_written")  # migration 18's
        conn.execute("DROP TABLE intent_seconds")  # migration 19's
        conn.execute("DROP TABLE server_times")  # migration 20's
        conn.execute("DELETE FROM schema_migrations WHERE version >= 4")  # and after it
    with pytest.raises(JournalError, match="schema version `3`"):
        open_journal(pg_url)
    assert [v for v, _ in migrate(pg_url)] == [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                               17, 18, 19, 20]
    with open_journal(pg_url) as j:
        after = j.latest_outcome("run:a", "p1")
        assert after is not None and after.model_dump() == before.model_dump()
        assert j.latest_outcome("run:a", "p9") is None
        assert j.latest_outcome("run:b", "p1") is None
        assert j.verify().intact  # the catalog it expects has the index
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # a table of 8 rows: no scan either way
        plan = " ".join(str(r[0]) for r in conn.execute(
            "EXPLAIN SELECT seq FROM events WHERE run_id = 'run:a' AND kind = 'run.outcome' "
            f"AND {pg_schema.OUTCOME_PROPOSAL} = 'p1' ORDER BY seq DESC LIMIT 1"))
    assert "Index Scan Backward using events_outcome" in plan, plan


def test_a_migrated_postgres_journal_has_the_catalog_this_code_expects(pg_url: str) -> None:
    """:data:`cradle_kg.storage.pg_catalog.EXPECTED` is what the migrations make, line for
    line (``audit verify`` refuses any other schema): regenerate it with a migration."""
    import psycopg

    from cradle_kg.storage.pg_catalog import EXPECTED
    from cradle_kg.storage.pg_verify import catalog

    with psycopg.connect(pg_url) as conn:
        found = catalog(conn)
    assert sorted(EXPECTED - found) == [] and sorted(found - EXPECTED) == []


def _size_event(i: int, actor: str, minutes: float, size: object = None, *,
                kind: str = "evidence.collected") -> NewEvent:
    payload: dict[str, object] = {"i": i, "source": "nul \u0000 here"}
    if size is not None:
        payload["bytes"] = size
    return NewEvent(run_id="evidence", kind=kind, subject=f"sha256:{i}", actor=actor,
                    at=T0 + timedelta(minutes=minutes), payload=payload)


def test_recent_sizes_reads_an_actors_newest_events_of_a_kind(journal: Journal) -> None:
    """A quota's count (evidence uploads per identity): newest first, from ``since`` on
    (inclusive), at most ``limit``; other actors and kinds are not read; a size that is
    not a number counts 0. Times out of append order are ordered by ``at``."""
    journal.append([
        _size_event(1, "agent:a", 0, 100),
        _size_event(2, "agent:a", 30, 200),
        _size_event(3, "agent:b", 31, 999),
        _size_event(4, "agent:a", 45, "300"),  # not a number
        _size_event(5, "agent:a", 40, 400.0),
        _size_event(6, "agent:a", 50, 99, kind="input.recorded"),
        _size_event(7, "agent:a", 20),  # no size
        _size_event(8, "agent:a", 60, 2**40),
    ])
    at = [T0 + timedelta(minutes=m) for m in (60, 45, 40, 30, 20)]
    recent = journal.recent_sizes("evidence.collected", "agent:a", since=T0 + timedelta(
        minutes=20), limit=None)
    assert recent == list(zip(at, [2**40, 0, 400, 200, 0], strict=True))
    assert journal.recent_sizes("evidence.collected", "agent:a", since=T0 + timedelta(
        minutes=20), limit=2) == recent[:2]
    assert journal.recent_sizes("evidence.collected", "agent:a", since=T0, limit=0) == []
    assert journal.recent_sizes("evidence.collected", "agent:a", since=T0 + timedelta(
        minutes=61), limit=None) == []
    assert journal.recent_sizes("evidence.collected", "agent:b", since=T0,
                                limit=10) == [(T0 + timedelta(minutes=31), 999)]
    assert len(journal.recent_sizes("evidence.collected", "agent:a", since=T0,
                                    limit=None)) == 6


def test_recent_sizes_is_one_range_of_the_kind_actor_index(target: str,
                                                           journal: Journal) -> None:
    """Read from the newest end of ``events_kind_actor`` (SQLite's from its first format,
    PostgreSQL's from migration 7): the rows read are at most the limit's, whatever the
    journal holds — not every event of the kind (every identity's, ever)."""
    journal.append([_size_event(i, f"agent:{i % 3}", i) for i in range(30)])
    if target.startswith("postgres"):
        import psycopg

        from cradle_kg.storage import pg_schema

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute("SET enable_seqscan = off")  # a table of 30 rows: no scan either way
            plan = " ".join(str(r[0]) for r in conn.execute(
                "EXPLAIN " + pg_schema.RECENT_SIZES_SQL,
                ("evidence.collected", "agent:1", "2026-01-01T00:10:00.000000Z", 5)))
        assert "Index Scan Backward using events_kind_actor" in plan, plan
        assert "Sort" not in plan, plan
        return
    import sqlite3

    from cradle_kg.storage.counting import RECENT_SIZES_SQL

    conn = sqlite3.connect(target)
    try:
        plan = " ".join(str(r[3]) for r in conn.execute(
            "EXPLAIN QUERY PLAN " + RECENT_SIZES_SQL,
            ("evidence.collected", "agent:1", "2026-01-01T00:10:00.000000Z", 5)))
    finally:
        conn.close()
    assert "USING INDEX events_kind_actor (kind=? AND actor=? AND at>?)" in plan, plan
    assert "TEMP B-TREE" not in plan, plan  # no sort: the index's own order, backwards


def test_a_journal_at_migration_6_gets_the_kind_actor_index(pg_url: str) -> None:
    """Migration 7 adds ``events_kind_actor``: a journal written before it is refused
    until migrated, then counts an identity's recent events as before, and verifies."""
    import psycopg

    from cradle_kg.storage.pg_admin import migrate

    with open_journal(pg_url) as j:
        j.append(SCRIPT)
        j.append([_size_event(10, "agent:a", 5, 10), _size_event(11, "agent:a", 6, 20)])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP INDEX events_kind_actor")
        conn.execute(f"DROP TABLE {', '.join(TABLES_8)}")  # migration 8's
        conn.execute("DROP INDEX approval_ids_seq")  # after it
        conn.execute("DROP INDEX events_subject_outcome")  # migration 9's
        conn.execute("DROP TABLE journal_keys")  # migration 10's
        conn.execute("DROP FUNCTION cradle_append")  # migration 11's
        conn.execute("DROP INDEX events_subject_decided")  # migration 17's
        conn.execute("DROP TABLE lineage_written")  # migration 18's
        conn.execute("DROP TABLE intent_seconds")  # migration 19's
        conn.execute("DROP TABLE server_times")  # migration 20's
        conn.execute("DELETE FROM schema_migrations WHERE version >= 7")
    with pytest.raises(JournalError, match="schema version `6`"):
        open_journal(pg_url)
    assert migrate(pg_url) == [(7, "kind-actor-index"), (8, "inbox-and-repairs"),
                              (9, "outcome-subject-index"), (10, "digest-key"),
                              (11, "append-function"), (12, "approval-exclusions"),
                              (13, "starting-runs"), (14, "unrun-approvals"),
                              (15, "append-run-end-guard"), (16, "append-approval-guard"),
                              (17, "decided-subject-index"), (18, "lineage-written"),
                              (19, "server-seconds"), (20, "server-times")]
    with open_journal(pg_url) as j:
        assert j.recent_sizes("evidence.collected", "agent:a", since=T0,
                              limit=None) == [(T0 + timedelta(minutes=6), 20),
                                              (T0 + timedelta(minutes=5), 10)]
        assert j.verify().intact  # the catalog it expects has the index


def test_an_outcome_holding_a_nul_is_journaled_and_found(journal: Journal) -> None:
    """A ``run.outcome`` whose payload holds a NUL (a tool's output, a reason): PostgreSQL's
    outcome index read the payload as JSON, which it cannot do for such a text, so the
    outcome was refused at its append — after the effect, so the call could not finish.
    The index (migration 6) reads it as every derivation does: written, found by
    ``latest_outcome``, and verified, on both journals."""
    journal.append(SCRIPT)
    journal.append([ev(7, "note"), ev(8, "run.outcome", subject="action:a2",
                                      outcome={"proposal_id": "p2", "status": "executed",
                                               "reasons": ["nul \u0000 here"]})])
    found = journal.latest_outcome("run:a", "p2")
    assert found is not None and found.seq == 8
    assert found.payload["outcome"]["reasons"] == ["nul \u0000 here"]
    assert journal.latest_outcome("run:a", "p1") is not None
    assert journal.verify().intact


def test_copy_moves_a_sqlite_journal_with_its_chain(tmp_path: Path, pg_url: str) -> None:
    from cradle_kg.storage.pg_admin import copy_sqlite

    src = tmp_path / "journal.sqlite"
    with SqliteJournal(src) as j:
        j.append(SCRIPT)
        head = j.head()
    report = copy_sqlite(src, pg_url)
    assert report.intact and (report.events, report.head_hash) == head
    with open_journal(pg_url) as pg:
        assert pg.dangling_intents() == [(4, "action:a2")]
        assert pg.approval_place("ap-1")[0] == "approval:d1"
        pg.append([ev(7)])  # and it goes on from the copied head
        assert pg.verify().intact
    with pytest.raises(JournalError, match="already holds events"):
        copy_sqlite(src, pg_url)


def test_a_nul_in_a_value_leaves_the_derived_tables_verifiable(journal: Journal) -> None:
    """An agent's argument, or an approval's action, may hold a NUL; PostgreSQL reads no
    key of a JSON text holding one, so `audit verify` (which derives the tables again from
    the events) said "cannot be read" and the journal was not intact. A task id holding
    the *text* backslash-u0000 (no NUL) is counted under that very id."""
    journal.append(SCRIPT)
    task = "t\\u0000x"  # six characters of text after the t, no NUL
    journal.append([
        ev(7, "action.intent", subject="action:a9", key="k9", agent="agent:a", task_id=task,
           tenant="default", cost=1.5, action={"arguments": {"note": "x \u0000 \\\u0000 y"}}),
        ev(8, "approval.requested", subject="approval:d9",
           approval={"id": "ap-9", "action": {"arguments": {"note": "\u0000"}}})])
    assert journal.verify().intact
    assert journal.usage_since(field="task_id", value=task, since=T0) == (1, 1.5)
    assert journal.approval_place("ap-9")[0] == "approval:d9"
