"""State derived from the journal, kept in the journal's own transaction.

The runtime's hot paths read these tables instead of folding events from the start, so
their cost does not grow with the journal. Each table is a pure function of the events:
:func:`apply` updates it inside the transaction that appends the events (all or none),
:data:`DERIVATIONS` says how to compute it from the events alone — the same SQL rebuilds
it (:func:`rebuild`, when an older journal is upgraded) and lets ``audit verify`` compare
it row by row (:func:`compare`), so an edited, deleted or forged row is reported like an
edited event.

==============  =====================================================================
usage           per UTC second and per scope (``*`` all, ``agent``, ``task_id``,
                ``tenant``): the intents written (calls attempted) and their declared
                cost in that second, and the running totals of both up to and
                including it — what rate and cost limits read; and per budget scope
                (``budget.tenant``, ``budget.workflow``, ``budget.invocation``): the
                model calls charged (``model.reserved``, and a ``model.called`` with
                no reservation, written before reservations) — what budgets read;
                and per agent (``refusals.agent``) the proposals gate 1 refused
                (a ``decision.made`` naming ``refused_agent``) — what
                ``refusals_per_agent_per_hour`` reads; and per quota and identity
                (``quota.<key>``) the records that it reached the quota
                (``quota.reached``) — what bounds them to one an hour
open_intents    every ``action.intent`` with no ``run.outcome`` about its subject after
                it — what recovery reads when a runtime opens
approval_ids    where each approval's events live (its subject), by approval id
runs            each run: the seq of its first event and how many proposals it received
run_state       each run: what its state is decided from (:mod:`.run_state_sql`)
human_tasks     each human task opened, and the seq of its resolution (:mod:`.tasks_sql`)
repairs         each run's ``repair`` outcomes, counted (:mod:`.tasks_sql`)
undecided_      each approval requested and not decided yet (:mod:`.tasks_sql`)
approvals
approval_       who may never decide each approval requested (:mod:`.tasks_sql`)
exclusions
starting_runs   each workflow run on its way to its first human step (:mod:`.tasks_sql`)
unrun_          each approval asked under a key, approved and not run yet (:mod:`.tasks_sql`)
approvals
lineage_        each value an executed action's arguments carried on untrusted content only
written         (the ``written`` of its latest ``lineage.traced`` before its
                ``action.observed``): its first token, its tokens (JSON), the observation's
                seq — what a trusted read of any later run is not the origin of
==============  =====================================================================

The rate-limit window (read by :meth:`~.store.Journal.usage_since`) is a sliding window
at one-second resolution, read as a difference of running totals: the calls in
``[since, now]`` are the scope's latest running total minus its running total at the last
second before the one that holds ``since`` — two index probes, whatever the window's
length, the call rate or the size of the journal. The oldest second counts in full: a
limit may refuse up to one second early, never late (fail closed). An intent dated before
the scope's latest second (two processes' clocks) also adds itself to the running totals
of the later seconds, so the totals stay exact in any order of arrival.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from . import run_state_sql, tasks_sql
from .counting import (
    BUDGET_SCOPES,
    QUOTA_REACHED,
    QUOTA_SCOPE_PREFIX,
    REFUSALS_SCOPE,
    REFUSED_AGENT,
    USAGE_FIELDS,
    counted_keys,
    intent_cost,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS usage (
    scope   TEXT NOT NULL,
    subject TEXT NOT NULL,
    second  TEXT NOT NULL,
    calls   INTEGER NOT NULL,
    total_calls INTEGER NOT NULL,
    cost    REAL NOT NULL,
    total_cost  REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS usage_key ON usage(scope, subject, second);
CREATE TABLE IF NOT EXISTS open_intents (
    seq     INTEGER NOT NULL,
    subject TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS open_intents_seq ON open_intents(seq);
CREATE INDEX IF NOT EXISTS open_intents_subject ON open_intents(subject);
CREATE TABLE IF NOT EXISTS approval_ids (
    approval_id TEXT NOT NULL,
    subject     TEXT NOT NULL,
    seq         INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS approval_ids_id ON approval_ids(approval_id);
CREATE TABLE IF NOT EXISTS runs (
    run_id    TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    proposals INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS runs_id ON runs(run_id);
CREATE INDEX IF NOT EXISTS runs_first ON runs(first_seq);
CREATE TABLE IF NOT EXISTS lineage_written (
    first TEXT NOT NULL,
    value TEXT NOT NULL,
    seq   INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS lineage_written_value ON lineage_written(value);
CREATE INDEX IF NOT EXISTS lineage_written_first ON lineage_written(first, seq)
"""
SCHEMA_STATEMENTS = (tuple(s.strip() for s in SCHEMA.split(";") if s.strip())
                     + run_state_sql.SQLITE_SCHEMA + tasks_sql.SQLITE_SCHEMA)

_COST = ("CASE WHEN json_type(payload, '$.cost') IN ('integer', 'real') "
         "THEN json_extract(payload, '$.cost') ELSE 0 END")
_INTENTS = "FROM events WHERE kind = 'action.intent'"
#: the events a budget is charged by: a reservation, or a call made without one (an older
#: journal's; a call made since carries ``"reserved": true`` and is not charged twice)
_CHARGES = ("FROM events WHERE (kind = 'model.reserved' OR (kind = 'model.called' AND "
            "json_type(payload, '$.reserved') IS NOT 'true'))")
_USAGE_FROM_EVENTS = " UNION ALL ".join(
    [f"SELECT '*' AS scope, '' AS subject, substr(at, 1, 19) AS second, {_COST} AS cost "
     f"{_INTENTS}"]
    + [f"SELECT '{f}', json_extract(payload, '$.{f}'), substr(at, 1, 19), {_COST} {_INTENTS} "
       f"AND json_type(payload, '$.{f}') = 'text'" for f in USAGE_FIELDS]
    + [f"SELECT '{BUDGET_SCOPES['invocation']}', run_id, substr(at, 1, 19), {_COST} "
       f"{_CHARGES}"]
    + [f"SELECT '{BUDGET_SCOPES[f]}', json_extract(payload, '$.{f}'), substr(at, 1, 19), "
       f"{_COST} {_CHARGES} AND json_type(payload, '$.{f}') = 'text'"
       for f in ("tenant", "workflow")]
    + [f"SELECT '{REFUSALS_SCOPE}', json_extract(payload, '$.{REFUSED_AGENT}'), "
       "substr(at, 1, 19), 0 FROM events WHERE kind = 'decision.made' AND "
       f"json_type(payload, '$.{REFUSED_AGENT}') = 'text'"]
    + [f"SELECT '{QUOTA_SCOPE_PREFIX}' || json_extract(payload, '$.quota'), "
       "json_extract(payload, '$.identity'), substr(at, 1, 19), 0 FROM events WHERE "
       f"kind = '{QUOTA_REACHED}' AND json_type(payload, '$.quota') = 'text' AND "
       "json_type(payload, '$.identity') = 'text'"])

#: intents with no run.outcome written after them (one indexed probe per intent)
DANGLING_SQL = (
    "SELECT i.seq, i.subject FROM events i WHERE i.kind = 'action.intent' AND NOT EXISTS "
    "(SELECT 1 FROM events o WHERE o.subject = i.subject AND o.kind = 'run.outcome' "
    "AND o.seq > i.seq) ORDER BY i.seq"
)


#: the ``written`` values of the action an observation executed: of the latest
#: ``lineage.traced`` of its run about it before it (``{execution}``, ``{run}``, ``{seq}``:
#: the observation's, as columns or parameters), each a JSON array of tokens whose first is
#: text
_TRACED_WRITTEN = (
    "json_each((SELECT t.payload FROM events t WHERE t.subject = {execution} AND "
    "t.kind = 'lineage.traced' AND t.run_id = {run} AND t.seq < {seq} ORDER BY t.seq DESC "
    "LIMIT 1), '$.written') w")
_WRITTEN_ROW = "w.type = 'array' AND json_type(w.value, '$[0]') = 'text'"
LINEAGE_WRITTEN_SQL = (
    "INSERT OR IGNORE INTO lineage_written(first, value, seq) SELECT json_extract(w.value, "
    "'$[0]'), w.value, ?1 FROM "
    + _TRACED_WRITTEN.format(execution="?3", run="?2", seq="?1") + f" WHERE {_WRITTEN_ROW}")
#: the written values whose first token is one of ``{marks}``, recorded before a seq
#: (parameters: the seq, then the tokens)
LINEAGE_WRITTEN_READ = ("SELECT value FROM lineage_written WHERE seq < ? AND first IN "
                        "({marks})")


@dataclass(frozen=True, slots=True)
class Derivation:
    """One derived table: its columns, its rows computed from the events, in key order."""

    table: str
    columns: str
    from_events: str
    order: str

    def stored(self) -> str:
        return f"SELECT {self.columns} FROM {self.table} ORDER BY {self.order}"


#: the usage columns; the first :data:`USAGE_EXACT` compare exactly, the costs up to rounding
USAGE_COLUMNS = "scope, subject, second, calls, total_calls, cost, total_cost"
USAGE_EXACT = 5
_RUNNING = "OVER (PARTITION BY scope, subject ORDER BY second ROWS UNBOUNDED PRECEDING)"

DERIVATIONS = (
    Derivation("usage", USAGE_COLUMNS,
               f"SELECT scope, subject, second, COUNT(*), SUM(COUNT(*)) {_RUNNING}, "
               f"TOTAL(cost), SUM(TOTAL(cost)) {_RUNNING} FROM ({_USAGE_FROM_EVENTS}) "
               "GROUP BY scope, subject, second ORDER BY scope, subject, second",
               "scope, subject, second"),
    Derivation("open_intents", "seq, subject", DANGLING_SQL, "seq"),
    Derivation("approval_ids", "approval_id, subject, seq",
               "SELECT json_extract(payload, '$.approval.id'), subject, MIN(seq) FROM events "
               "WHERE kind = 'approval.requested' AND json_type(payload, '$.approval.id') = "
               "'text' GROUP BY 1 ORDER BY 1", "approval_id"),
    Derivation("runs", "run_id, first_seq, proposals",
               "SELECT run_id, MIN(seq), SUM(kind = 'proposal.received') FROM events "
               "GROUP BY run_id ORDER BY run_id", "run_id"),
    Derivation("run_state", run_state_sql.COLUMNS, run_state_sql.from_events("sqlite"),
               "run_id"),
    *(Derivation(t, tasks_sql.COLUMNS[t], tasks_sql.from_events("sqlite", t),
                 tasks_sql.ORDER.get(t, tasks_sql.COLUMNS[t].split(",")[0]))
      for t in tasks_sql.TABLES),
    Derivation("lineage_written", "first, value, seq",
               "SELECT json_extract(w.value, '$[0]'), w.value, MIN(o.seq) FROM events o, "
               + _TRACED_WRITTEN.format(
                   execution="json_extract(o.payload, '$.observation.execution_id')",
                   run="o.run_id", seq="o.seq")
               + f" WHERE o.kind = 'action.observed' AND {_WRITTEN_ROW} GROUP BY w.value "
               "ORDER BY w.value", "value"),
)
_REFRESH = run_state_sql.refresh("sqlite")


# --- kept in the append's transaction -------------------------------------------------

#: one intent in one scope's bucket: the second's row (its running totals start from the
#: previous second's), then the running totals of any later second (none, unless the
#: intent arrived out of time order). Parameters: scope, subject, second, cost.
USAGE_STATEMENTS = (
    "INSERT INTO usage(scope, subject, second, calls, total_calls, cost, total_cost) "
    "SELECT ?1, ?2, ?3, 1, COALESCE(MAX(p.total_calls), 0) + 1, ?4, "
    "COALESCE(MAX(p.total_cost), 0) + ?4 FROM (SELECT total_calls, total_cost FROM usage "
    "WHERE scope = ?1 AND subject = ?2 AND second < ?3 ORDER BY second DESC LIMIT 1) p "
    "WHERE true ON CONFLICT(scope, subject, second) DO UPDATE SET calls = calls + 1, "
    "total_calls = total_calls + 1, cost = cost + excluded.cost, "
    "total_cost = total_cost + excluded.cost",
    "UPDATE usage SET total_calls = total_calls + 1, total_cost = total_cost + ?4 "
    "WHERE scope = ?1 AND subject = ?2 AND second > ?3",
)
#: the running totals at the scope's latest second and at the last second before the
#: window (parameters: scope, subject, the window's first second)
USAGE_WINDOW_SQL = (
    "SELECT COALESCE((SELECT total_calls FROM usage WHERE scope = ?1 AND subject = ?2 "
    "ORDER BY second DESC LIMIT 1), 0), COALESCE((SELECT total_cost FROM usage "
    "WHERE scope = ?1 AND subject = ?2 ORDER BY second DESC LIMIT 1), 0.0), "
    "COALESCE((SELECT total_calls FROM usage WHERE scope = ?1 AND subject = ?2 "
    "AND second < ?3 ORDER BY second DESC LIMIT 1), 0), COALESCE((SELECT total_cost "
    "FROM usage WHERE scope = ?1 AND subject = ?2 AND second < ?3 ORDER BY second DESC "
    "LIMIT 1), 0.0)")

#: the subject of a usage scope with the largest running total of cost, its totals
#: (parameter: the scope): one row per subject of the scope read (for ``budgets status``
#: on a ``*`` budget, not for a call)
USAGE_TOP_SQL = (
    "SELECT u.subject, u.total_calls, u.total_cost, 0, 0.0 FROM usage u WHERE u.scope = ?1 "
    "AND u.second = (SELECT MAX(l.second) FROM usage l WHERE l.scope = ?1 "
    "AND l.subject = u.subject) ORDER BY u.total_cost DESC, u.subject DESC LIMIT 1")
def apply_runs(conn: sqlite3.Connection, runs: dict[str, list[int]]) -> None:
    """The ``runs`` rows of one append: per run, ``[its first seq in the append, the
    proposals received in it]`` — one upsert per run, not one per event (the row is the
    same: an existing run keeps its first seq and adds the count)."""
    if not runs:
        return
    conn.executemany(
        "INSERT INTO runs(run_id, first_seq, proposals) VALUES (?, ?, ?) "
        "ON CONFLICT(run_id) DO UPDATE SET proposals = proposals + excluded.proposals",
        [(run_id, first, proposals) for run_id, (first, proposals) in runs.items()])


#: the kinds whose statements in :func:`apply` may read the ``events`` table (a run's
#: state recomputed from its events, a task's resolution): the append inserts the events
#: up to such an event before applying it; the other statements read only derived tables
_READS_EVENTS = run_state_sql.KINDS | tasks_sql.KINDS | {"action.observed"}


#: every kind :func:`apply` does something for (the others, most of a call's events —
#: ``proposal.received``, ``verification.recorded``,
#: ``transition.committed`` — change no derived table: returned from at once)
_APPLIES = _READS_EVENTS | {"action.intent", "decision.made", QUOTA_REACHED, "model.reserved",
                            "model.called", "run.outcome", "approval.requested"}


def reads_events(kind: str) -> bool:
    """Whether :func:`apply` of an event of ``kind`` may read the ``events`` table."""
    return kind in _READS_EVENTS


def apply(conn: sqlite3.Connection, *, seq: int, run_id: str, kind: str, subject: str,
          at: str, payload: dict[str, Any], settled: bool = False) -> None:
    """Update the derived tables but ``runs`` for one event, inside the append's
    transaction (``runs``: :func:`.counting.count_run`, then :func:`apply_runs` once per append).
    ``settled``: an intent whose outcome is later in the same append
    (:func:`.counting.settled_intents`): no ``open_intents`` row."""
    if kind not in _APPLIES:
        return
    if kind in run_state_sql.KINDS:
        fast = run_state_sql.outcome_update("sqlite", payload) if kind == "run.outcome" \
            else None
        if fast is not None:
            conn.execute(fast[0], (run_id, *fast[1]))
        else:  # rare (people's events): the run's row, recomputed from its own events
            for statement in _REFRESH:
                conn.execute(statement, (run_id,))
    if kind in tasks_sql.KINDS:
        for sql, args in tasks_sql.statements("sqlite", seq=seq, run_id=run_id, kind=kind,
                                              subject=subject, payload=payload):
            conn.execute(sql, args)
    keys = counted_keys(kind, run_id, payload)
    if keys:
        cost = intent_cost(payload)
        rows = [(s, v, at[:19], cost) for s, v in keys]
        for statement in USAGE_STATEMENTS:
            conn.executemany(statement, rows)
    if kind == "action.intent":
        if not settled:
            conn.execute("INSERT INTO open_intents(seq, subject) VALUES (?, ?)", (seq, subject))
        for sql, args in tasks_sql.ran("sqlite", run_id=run_id, payload=payload):
            conn.execute(sql, args)
    elif kind == "run.outcome":
        conn.execute("DELETE FROM open_intents WHERE subject = ?", (subject,))
    elif kind == "approval.requested":
        approval = payload.get("approval")
        approval_id = approval.get("id") if isinstance(approval, dict) else None
        if isinstance(approval_id, str):
            conn.execute("INSERT OR IGNORE INTO approval_ids(approval_id, subject, seq) "
                         "VALUES (?, ?, ?)", (approval_id, subject, seq))
    elif kind == "action.observed":
        execution = executed_id(payload)
        if execution is not None:  # one probe of ``events_subject``
            conn.execute(LINEAGE_WRITTEN_SQL, (seq, run_id, execution))


def executed_id(payload: dict[str, Any]) -> str | None:
    """The action an ``action.observed`` executed (its observation's ``execution_id``)."""
    observation = payload.get("observation")
    execution = observation.get("execution_id") if isinstance(observation, dict) else None
    return execution if isinstance(execution, str) else None


def rebuild(conn: sqlite3.Connection, tables: tuple[str, ...] | None = None) -> None:
    """Recompute every derived table (or those of ``tables``) from the events (inside the
    caller's transaction)."""
    for d in DERIVATIONS:
        if tables is not None and d.table not in tables:
            continue
        conn.execute(f"DELETE FROM {d.table}")
        conn.execute(f"INSERT INTO {d.table}({d.columns}) {d.from_events}")


# --- checked by audit verify ----------------------------------------------------------

def _same(stored: tuple[Any, ...], derived: tuple[Any, ...], table: str) -> bool:
    exact = USAGE_EXACT if table == "usage" else len(derived)
    pairs = list(zip(stored, derived, strict=True))
    if any(a != b or type(a) is not type(b) for a, b in pairs[:exact]):
        return False
    # costs are summed in another order on each side: equal up to float rounding
    return all(isinstance(a, float) and isinstance(b, float)
               and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) for a, b in pairs[exact:])


def compare(conn: sqlite3.Connection, lacks: frozenset[str] = frozenset()) -> str | None:
    """The first derived row that differs from what the events give, or None (``lacks``:
    the tables an older format read as it is has not, not compared).

    Both sides are streamed in key order (SQLite sorts on disk), so memory stays constant.
    """
    for d in DERIVATIONS:
        if d.table in lacks:
            continue
        stored: Iterator[tuple[Any, ...]] = conn.execute(d.stored())
        derived: Iterator[tuple[Any, ...]] = conn.execute(d.from_events)
        for row, want in zip_longest(stored, derived):
            if row is None or want is None or not _same(tuple(row), tuple(want), d.table):
                shown = json.dumps(list(row) if row is not None else None, default=repr)
                return (f"the derived table `{d.table}` does not match the events (row "
                        f"{shown[:120]}): it was edited, or written by something else")
    return None


__all__ = ["DANGLING_SQL", "DERIVATIONS", "LINEAGE_WRITTEN_READ", "LINEAGE_WRITTEN_SQL",
           "SCHEMA_STATEMENTS", "USAGE_COLUMNS", "USAGE_EXACT", "USAGE_STATEMENTS",
           "USAGE_TOP_SQL", "USAGE_WINDOW_SQL", "apply", "apply_runs", "compare",
           "executed_id", "reads_events", "rebuild"]
