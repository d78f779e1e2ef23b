"""Budgets charged at reservation, read from derived state (issue: limits across workers).

* a model call is charged before it is made (``model.reserved``, carrying one ``UsageCap``
  per budget, re-checked by the journal under its writer's lock): workers racing on one
  budget never spend past it;
* spend is read from the journal's ``usage`` buckets (``budget.<level>``), never folded
  from the ``model.called`` events; the buckets are derived in the append's transaction,
  rebuilt into an older journal, and checked by ``audit verify``.

Both journals (``journal_backend``), real files and a real PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import JournalError, WorkflowError
from cradle_kg.storage import (
    JOURNAL_FORMAT,
    JOURNAL_URL_ENV,
    LimitReached,
    NewEvent,
    SqliteJournal,
    open_journal,
    tasks_sql,
    verify_journal,
)
from cradle_kg.storage import sqlite_derived as derived
from cradle_kg.workflow import Budget, BudgetBook, Engine
from cradle_kg.workflow.budgets import Level, Scope
from cradle_kg.workflow.engine import ENGINE_ACTOR
from cradle_kg.workflow.errors import ModelError
from cradle_kg.workflow.examples import invoice_triage
from cradle_kg.workflow.model import ModelRequest, ModelResponse
from tests.racers import race, racer, racing_context
from tests.workflow.conftest import recorded, triage

MESSAGE = {"sender": "a@b.test", "subject": "Invoice", "body": "Pay.", "account": "acct-1",
           "amount": 5}
COST = 1.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _set(rt: Runtime, level: Level, subject: str, limit: float) -> None:
    rt.context.append([BudgetBook(rt.journal).set_event(
        Budget(level=level, subject=subject, limit=limit), by="user:ops", now=rt.clock())])


def _raw(home: Path, *statements: str) -> None:
    """Statements run on the home's journal behind the runtime's back (a tamper, an older
    cradle-kg's state)."""
    import os

    url = os.environ.get(JOURNAL_URL_ENV)
    if url:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)
        return
    conn = sqlite3.connect(home / "journal.sqlite", isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


# --- the race: several processes at a barrier, one budget -----------------------------

_RACERS = 4
_ROUNDS = 15


def _race_worker(home: str, worker: int, barrier: Any, out: Any) -> None:
    """Every round, at the barrier, one run of the triage workflow (tenant ``default``)."""
    with Runtime(Path(home), graph_sync=False) as rt:
        engine = Engine(rt, client=recorded(*[triage("invoice")] * _ROUNDS))
        results = []
        for r in range(_ROUNDS):
            barrier.wait(120)  # the budget of this round is set
            try:
                status = engine.start(invoice_triage(), MESSAGE, run_id=f"wf:w{worker}-r{r}")
                results.append((status.status, status.code))
            except WorkflowError as exc:
                results.append(("error", exc.message))
            barrier.wait(120)  # every worker is done with the round
    out.put(results)


@pytest.mark.slow
@pytest.mark.usefixtures("journal_backend")
def test_workers_racing_on_one_budget_never_spend_past_it(wf_home: Path) -> None:
    """Each round the tenant's budget is raised by one call's cost, then 4 processes start a
    run at once: each reads spend = limit - cost, so each passes the check. The reservation
    carries the budget as a cap the journal checks under its writer's lock: exactly one
    call per round is reserved and made, the others are refused
    (``budget_exceeded_tenant``) — never two calls paid."""
    ctx = racing_context()
    barrier, out = ctx.Barrier(_RACERS + 1), ctx.Queue()
    with Runtime(wf_home, graph_sync=False) as rt:
        procs = [racer(ctx, _race_worker, str(wf_home), w, barrier, out)
                 for w in range(_RACERS)]
        def rounds() -> None:  # the parent raises the budget by one call each round
            for r in range(_ROUNDS):
                _set(rt, "tenant", "default", (r + 1) * COST)
                barrier.wait(120)
                barrier.wait(120)

        results = race(procs, out, meanwhile=rounds)
        book = BudgetBook(rt.journal)
        spent = book.spent("tenant", "default")
        reserved = rt.journal.events_of_kind("model.reserved")
        called = rt.journal.events_of_kind("model.called")
        assert rt.journal.verify().intact
    made = [sum(1 for w in results if w[r][0] == "waiting_human") for r in range(_ROUNDS)]
    assert made == [1] * _ROUNDS, f"calls made per round (limit: one more each round): {made}"
    assert spent == len(reserved) * COST == _ROUNDS * COST  # never past the last limit
    assert len(called) == _ROUNDS and all(e.payload["reserved"] is True for e in called)
    refused = Counter(code for w in results for status, code in w if status != "waiting_human")
    assert refused == {"budget_exceeded_tenant": _ROUNDS * (_RACERS - 1)}, refused


# --- the engine's reservation -----------------------------------------------------------

class _FailingClient:
    kind = "failing"

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise ModelError("the model server is down")


@pytest.mark.usefixtures("journal_backend")
def test_a_call_is_reserved_before_it_is_made_and_a_failed_call_stays_charged(
        wf_rt: Runtime) -> None:
    _set(wf_rt, "tenant", "default", 10 * COST)
    ok = Engine(wf_rt, client=recorded(triage("invoice"))).start(invoice_triage(), MESSAGE,
                                                                 run_id="wf:a")
    assert ok.status == "waiting_human"
    kinds = [e.kind for e in wf_rt.journal.events(run_id="wf:a")]
    assert kinds.index("model.reserved") + 1 == kinds.index("model.called")
    reservation = wf_rt.journal.events_of_kind("model.reserved")[0]
    assert reservation.subject == "step:wf:a/classify"
    assert reservation.payload == {"step": "classify", "attempt": 1,
                                   "model": "qwen2.5-0.5b-instruct", "cost": COST,
                                   "tenant": "default", "workflow": "invoice-triage"}
    down = Engine(wf_rt, client=_FailingClient()).start(invoice_triage(), MESSAGE,
                                                        run_id="wf:b")
    assert (down.status, down.code) == ("failed", "model_unavailable")
    book = BudgetBook(wf_rt.journal)
    assert book.spent("invocation", "wf:b") == COST  # conservative: reserved, then failed
    assert book.spent("tenant", "default") == 2 * COST
    assert book.spent("workflow", "invoice-triage") == 2 * COST
    assert len(wf_rt.journal.events_of_kind("model.called")) == 1  # not charged twice


@pytest.mark.usefixtures("journal_backend")
def test_a_reservation_another_worker_got_past_first_is_checked_again_and_refused(
        wf_rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race, in one process: between this worker's check and its append, another
    worker's reservation takes the tenant to its limit. The journal refuses the append
    (``LimitReached``, nothing written); the engine reads again and refuses the call."""
    _set(wf_rt, "tenant", "default", 1 * COST)
    original = wf_rt.context.append

    def other_worker_first(events: Any, **kw: Any) -> Any:
        if any(e.kind == "model.reserved" for e in events):
            wf_rt.journal.append([NewEvent(
                run_id="wf:other", kind="model.reserved", subject="step:wf:other/classify",
                actor=ENGINE_ACTOR, at=wf_rt.clock(),
                payload={"step": "classify", "attempt": 1, "model": "m", "cost": COST,
                         "tenant": "default", "workflow": "invoice-triage"})])
            monkeypatch.setattr(wf_rt.context, "append", original)
        return original(events, **kw)

    monkeypatch.setattr(wf_rt.context, "append", other_worker_first)
    status = Engine(wf_rt, client=recorded(triage("invoice"))).start(
        invoice_triage(), MESSAGE, run_id="wf:mine")
    assert (status.status, status.code) == ("failed", "budget_exceeded_tenant")
    assert [e.run_id for e in wf_rt.journal.events_of_kind("model.reserved")] == ["wf:other"]
    assert wf_rt.journal.events_of_kind("model.called") == []
    assert BudgetBook(wf_rt.journal).spent("tenant", "default") == COST


@pytest.mark.usefixtures("journal_backend")
def test_a_reservation_that_keeps_losing_fails_closed(wf_rt: Runtime,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """When the re-read check passes but the journal keeps refusing (budgets changing under
    it), the engine tries 3 times, then stops with an error: nothing charged, no call."""
    _set(wf_rt, "tenant", "default", 10 * COST)
    original = wf_rt.context.append
    tries = []

    def always_limited(events: Any, **kw: Any) -> Any:
        if any(e.kind == "model.reserved" for e in events):
            tries.append(events[0].at)
            raise LimitReached(events[0].caps[0])
        return original(events, **kw)

    monkeypatch.setattr(wf_rt.context, "append", always_limited)
    client = recorded(triage("invoice"))
    with pytest.raises(WorkflowError, match="kept reaching its budgets first"):
        Engine(wf_rt, client=client).start(invoice_triage(), MESSAGE, run_id="wf:x")
    assert len(tries) == 3 and len(set(tries)) == 1  # one clock reading for the event
    assert client.served == 0
    assert wf_rt.journal.events_of_kind("model.reserved") == []
    assert BudgetBook(wf_rt.journal).spent("tenant", "default") == 0.0


# --- read from derived state, checked by audit verify --------------------------------

@pytest.mark.usefixtures("journal_backend")
def test_spend_is_read_from_usage_and_a_tampered_budget_row_is_reported(
        wf_home: Path) -> None:
    with Runtime(wf_home, graph_sync=False) as rt:
        _set(rt, "tenant", "default", 10 * COST)
        Engine(rt, client=recorded(*[triage("invoice")] * 3)).start(invoice_triage(), MESSAGE)
        book = BudgetBook(rt.journal)
        assert book.spent("tenant", "default") == COST
        assert rt.journal.usage_total("budget.tenant", "default") == (1, COST)
        assert rt.journal.verify().intact
    _raw(wf_home, "UPDATE usage SET total_cost = total_cost - 1 "
                  "WHERE scope = 'budget.tenant' AND subject = 'default'")
    with Runtime(wf_home, graph_sync=False) as rt:
        # the spend a check reads is the bucket's, not a fold of the events
        assert BudgetBook(rt.journal).spent("tenant", "default") == 0.0
        report = rt.journal.verify()
    assert not report.intact and "`usage`" in str(report.reason), report


def test_a_check_reads_no_model_call_event(tmp_path: Path) -> None:
    """The statements a budget check issues (SQLite's trace): the newest ``budget.set`` of
    each budget (through ``budget_sets``), then two index probes of ``usage`` per
    applicable budget — never the model calls, however many there are."""
    with SqliteJournal(tmp_path / "journal.sqlite") as j:
        book = BudgetBook(j)
        j.append([book.set_event(Budget(level=level, subject="*", limit=1000.0),
                                 by="user:ops", now=T0) for level in ("tenant", "invocation")])
        j.append([NewEvent(run_id=f"wf:{i}", kind=kind, subject=f"step:wf:{i}/s",
                           actor=ENGINE_ACTOR, at=T0 + timedelta(seconds=i),
                           payload={"cost": 1.0, "tenant": "acme", "workflow": "w",
                                    **({"reserved": True} if kind == "model.called" else {})})
                  for i in range(200) for kind in ("model.reserved", "model.called")])
        seen: list[str] = []
        j._conn.set_trace_callback(seen.append)  # the journal's own connection
        try:
            book.check(Scope("acme", "w", "wf:7"), 1.0)
            standings = book.standings(Scope("acme", "w", "wf:7"))
        finally:
            j._conn.set_trace_callback(None)
    assert [s.spent for s in standings] == [200.0, 1.0]
    assert not any("model." in q for q in seen), seen
    events = [q for q in seen if "events" in q]
    assert events and all("FROM budget_sets b JOIN events e" in q for q in events), events
    plan = sqlite3.connect(tmp_path / "journal.sqlite").execute(
        "EXPLAIN QUERY PLAN " + derived.USAGE_WINDOW_SQL,
        ("budget.tenant", "acme", "0001")).fetchall()
    assert all("USING" in str(row[3]) and "INDEX" in str(row[3]) for row in plan
               if "usage" in str(row[3])), plan


# --- an older journal: model.called only, no budget buckets ----------------------------

def _legacy_calls() -> list[NewEvent]:
    """Model calls as a cradle-kg before reservations journaled them (no ``reserved``),
    one holding a NUL in the model's answer (PostgreSQL reads no key of such a text)."""
    out = []
    for i, (tenant, workflow, cost) in enumerate([("acme", "w1", 1.5), ("acme", "w2", 2.0),
                                                  ("beta", "w1", 0.25), ("acme", "w1", 1.0)]):
        out.append(NewEvent(
            run_id=f"wf:{i % 3}", kind="model.called", subject=f"step:wf:{i % 3}/s",
            actor=ENGINE_ACTOR, at=T0 + timedelta(seconds=i // 2),
            payload={"step": "s", "attempt": 1, "model": "m", "cost": cost, "tenant": tenant,
                     "workflow": workflow,
                     "response": {"content": "a \u0000 b" if i == 1 else "{}"}}))
    return out


def _folded(events: list[NewEvent]) -> dict[tuple[str, str], float]:
    """What the spend was before: every ``model.called`` event folded (the old read)."""
    spent: dict[tuple[str, str], float] = {}
    for e in events:
        for level, subject in (("tenant", e.payload["tenant"]),
                               ("workflow", e.payload["workflow"]), ("invocation", e.run_id)):
            spent[(level, subject)] = spent.get((level, subject), 0.0) + e.payload["cost"]
    return spent


def _spends(book: BudgetBook, keys: Any) -> dict[tuple[str, str], float]:
    return {(level, subject): book.spent(level, subject) for level, subject in keys}


def test_an_older_sqlite_journal_gets_its_budget_spend_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    calls = _legacy_calls()
    want = _folded(calls)
    with SqliteJournal(path) as j:
        j.append(calls)
        head = j.head()
    # what a cradle-kg before this one left: format 5, no budget buckets
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DELETE FROM usage WHERE scope LIKE 'budget.%'")
    conn.execute("PRAGMA user_version = 5")
    conn.close()
    old = verify_journal(path)
    assert not old.intact and f"format `5`, not `{JOURNAL_FORMAT}`" in str(old.reason), old
    assert "open it once with this cradle-kg to upgrade it" in str(old.reason)
    with SqliteJournal(path) as j:
        assert j.head() == head
        book = BudgetBook(j)
        assert _spends(book, want) == want  # unchanged: read from the rebuilt buckets
        assert book.top("tenant") == ("acme", 4.5)
        # a call made since is charged by its reservation, not again by its record
        j.append([NewEvent(run_id="wf:0", kind=kind, subject="step:wf:0/s", actor=ENGINE_ACTOR,
                           at=T0 + timedelta(seconds=9),
                           payload={"cost": 1.0, "tenant": "acme", "workflow": "w1",
                                    **({"reserved": True} if kind == "model.called" else {})})
                  for kind in ("model.reserved", "model.called")])
        assert book.spent("tenant", "acme") == want[("tenant", "acme")] + 1.0
    assert verify_journal(path).intact
    copy = tmp_path / "rebuilt.sqlite"
    copy.write_bytes(path.read_bytes())
    conn = sqlite3.connect(copy, isolation_level=None)
    stored = conn.execute(derived.DERIVATIONS[0].stored()).fetchall()
    conn.execute("BEGIN")
    derived.rebuild(conn)
    conn.execute("COMMIT")
    assert conn.execute(derived.DERIVATIONS[0].stored()).fetchall() == stored
    conn.close()


def test_an_older_postgresql_journal_gets_its_budget_spend_when_migrated(pg_url: str) -> None:
    import psycopg

    from cradle_kg.storage.pg_admin import migrate

    calls = _legacy_calls()
    want = _folded(calls)
    with open_journal(pg_url) as j:
        j.append(calls)
    # what a database migrated by a cradle-kg before this one holds: no budget buckets
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM usage WHERE scope LIKE 'budget.%'")
        conn.execute("DROP INDEX events_kind_actor")  # nor migration 7's index
        conn.execute(f"DROP TABLE {', '.join(tasks_sql.TABLES)}")  # nor migration 8's
        conn.execute("DROP INDEX approval_ids_seq")
        conn.execute("DROP INDEX events_subject_outcome")  # nor migration 9's
        conn.execute("DROP TABLE journal_keys")  # nor migration 10's
        conn.execute("DROP FUNCTION cradle_append")  # nor migration 11's
        conn.execute("DROP INDEX events_subject_decided")  # nor migration 17's
        conn.execute("DROP TABLE lineage_written")  # nor migration 18's
        conn.execute("DROP TABLE intent_seconds")  # migration 19's
        conn.execute("DROP TABLE server_times")  # migration 20's
        conn.execute("DELETE FROM schema_migrations WHERE version >= 5")
    with pytest.raises(JournalError, match="schema version `4`"):
        open_journal(pg_url)
    assert migrate(pg_url)[0] == (5, "budget-usage")
    with open_journal(pg_url) as j:
        book = BudgetBook(j)
        assert _spends(book, want) == want
        assert book.top("tenant") == ("acme", 4.5)
        assert j.verify().intact
