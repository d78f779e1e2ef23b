"""The derived ``run_state`` table: per run, what its state (:class:`~cradle_kg.runs.RunState`)
is decided from, kept in the journal's own transaction on both backends.

==============  =====================================================================
last_proposal   the proposal id of the run's last ``run.outcome`` (one refused for
                reusing an id, which carries ``submission``, is not counted)
last_status     that outcome's status
open_tasks      ``human_task.opened`` events with no ``human_task.resolved`` of the same
                task id after them
waiting_steps   steps asked by ``human.requested`` after the workflow's last end with no
                ``human.decided`` of the same step after them
workflow        1 when a ``workflow.started`` was written for the run
finished        the kind of the run's last ``workflow.completed|failed``, if any
==============  =====================================================================

One SQL text per dialect computes the rows from the events alone (:func:`from_events`):
the append recomputes the row of the run it writes to (``run_id = ?``, so its cost is the
run's events of these kinds, not the journal's), an upgrade rebuilds every row, and
``audit verify`` compares every row. A row exists for every run that has one of
:data:`KINDS`; a listed run without one is in its default (nothing decided yet).

Readers group and filter by :data:`KEY` (a few columns that decide the state); the rule
that maps a key to a state lives once, in :mod:`cradle_kg.runs`.
"""

from __future__ import annotations

from typing import Any, Literal

Dialect = Literal["sqlite", "postgresql"]

#: the event kinds that change a run's row (any other event leaves it as it is)
KINDS = frozenset({"run.outcome", "human_task.opened", "human_task.resolved",
                   "workflow.started", "workflow.completed", "workflow.failed",
                   "human.requested", "human.decided"})

COLUMNS = "run_id, last_proposal, last_status, open_tasks, waiting_steps, workflow, finished"

SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS run_state (run_id TEXT NOT NULL, last_proposal TEXT, "
    "last_status TEXT, open_tasks INTEGER NOT NULL, waiting_steps INTEGER NOT NULL, "
    "workflow INTEGER NOT NULL, finished TEXT)",
    "CREATE UNIQUE INDEX IF NOT EXISTS run_state_id ON run_state(run_id)",
)
POSTGRES_SCHEMA = (
    "CREATE TABLE run_state (run_id text PRIMARY KEY, last_proposal text, last_status text, "
    "open_tasks bigint NOT NULL, waiting_steps bigint NOT NULL, workflow bigint NOT NULL, "
    "finished text)",
)

_KINDS_SQL = ", ".join(f"'{k}'" for k in sorted(KINDS))


def pg_payload(column: str = "payload") -> str:
    """An event's payload as PostgreSQL ``json`` whose every key can be read.

    PostgreSQL reads no key at all (``->>``, ``json_typeof``) of a JSON text that holds a
    NUL escape (backslash, ``u0000``) anywhere: "cannot be converted to text" — and a value
    an agent or a tool sends may hold a NUL. Each such escape is read as a space's
    (``u0020``); an escaped backslash followed by the text ``u0000`` (an even run of
    backslashes before it) is left alone, so an id holding that text reads as itself. The
    keys the derived tables read are ids (never a NUL) and numbers: they read as written."""
    return (f"regexp_replace({column}, '(?<!\\\\)((?:\\\\\\\\)*)\\\\u0000', "
            f"'\\1\\\\u0020', 'g')::json")


def _field(dialect: Dialect, alias: str, *path: str) -> str:
    if dialect == "sqlite":
        return f"json_extract({alias}.payload, '$.{'.'.join(path)}')"
    inner = "".join(f" -> '{p}'" for p in path[:-1])
    return f"({pg_payload(f'{alias}.payload')}{inner} ->> '{path[-1]}')"


def from_events(dialect: Dialect, *, one_run: bool = False) -> str:
    """The rows of ``run_state`` computed from the events, in ``run_id`` order (only the
    row of the run given as the one parameter when ``one_run``)."""
    ph = "?" if dialect == "sqlite" else "%s"
    where = f" AND run_id = {ph}" if one_run else ""
    order = "r.run_id" if dialect == "sqlite" else 'r.run_id COLLATE "C"'
    f = _field

    def unmatched(opened: str, closed: str, key: str, after: str = "") -> str:
        # on ``events`` itself, not the CTE: each probe is one run's events (its index)
        return (f"FROM events t WHERE t.run_id = r.run_id AND t.kind = '{opened}'{after} AND "
                f"NOT EXISTS (SELECT 1 FROM events x WHERE x.run_id = t.run_id AND x.kind = "
                f"'{closed}' AND x.seq > t.seq AND {f(dialect, 'x', key)} = "
                f"{f(dialect, 't', key)})")

    tasks = unmatched("human_task.opened", "human_task.resolved", "task_id")
    steps = unmatched("human.requested", "human.decided", "step",
                      " AND t.seq > COALESCE(r.fin_seq, 0)")
    submission = f(dialect, "ev", "submission")
    return (
        f"WITH ev AS (SELECT seq, run_id, kind, payload FROM events WHERE kind IN "
        f"({_KINDS_SQL}){where}), "
        f"r AS (SELECT run_id, MAX(CASE WHEN kind = 'run.outcome' AND "
        f"COALESCE({submission}, '') = '' THEN seq END) AS last_seq, "
        f"MAX(CASE WHEN kind = 'workflow.started' THEN 1 ELSE 0 END) AS workflow, "
        f"MAX(CASE WHEN kind IN ('workflow.completed', 'workflow.failed') THEN seq END) "
        f"AS fin_seq FROM ev GROUP BY run_id) "
        f"SELECT r.run_id, {f(dialect, 'o', 'outcome', 'proposal_id')}, "
        f"{f(dialect, 'o', 'outcome', 'status')}, (SELECT COUNT(*) {tasks}), "
        f"(SELECT COUNT(DISTINCT {f(dialect, 't', 'step')}) {steps}), "
        f"r.workflow, w.kind FROM r LEFT JOIN events o ON o.seq = r.last_seq "
        f"LEFT JOIN events w ON w.seq = r.fin_seq ORDER BY {order}")


def stored(dialect: Dialect) -> str:
    order = "run_id" if dialect == "sqlite" else 'run_id COLLATE "C"'
    return f"SELECT {COLUMNS} FROM run_state ORDER BY {order}"


def refresh(dialect: Dialect) -> tuple[str, str]:
    """The two statements that recompute one run's row (each takes the run id)."""
    ph = "?" if dialect == "sqlite" else "%s"
    return (f"DELETE FROM run_state WHERE run_id = {ph}",
            f"INSERT INTO run_state({COLUMNS}) {from_events(dialect, one_run=True)}")


def outcome_update(dialect: Dialect, payload: dict[str, Any]
                   ) -> tuple[str, tuple[Any, ...]] | None:
    """The statement that keeps a run's row for one ``run.outcome`` in constant time
    (the hot path: every governed call ends with one; re-reading the run's events would
    make a long run's calls slower as it grows), or None when the payload is not one this
    can settle (then the row is recomputed). Equal to :func:`from_events` by construction:
    a counted outcome becomes the last one; a refused submission changes nothing, and a
    run without a row yet has no task, step or workflow (a row exists for every run with
    one of :data:`KINDS`)."""
    ph = "?" if dialect == "sqlite" else "%s"
    outcome = payload.get("outcome")
    submission = payload.get("submission")
    if not isinstance(outcome, dict) or not isinstance(submission, str | None):
        return None
    proposal, status = outcome.get("proposal_id"), outcome.get("status")
    if not isinstance(proposal, str) or not isinstance(status, str):
        return None
    insert = (f"INSERT INTO run_state({COLUMNS}) VALUES ({ph}, {ph}, {ph}, 0, 0, 0, NULL) "
              "ON CONFLICT (run_id) DO ")
    if submission:  # refused for reusing an id: not counted
        return insert + "NOTHING", (None, None)
    return (insert + "UPDATE SET last_proposal = excluded.last_proposal, "
            "last_status = excluded.last_status", (proposal, status))


def one_row(dialect: Dialect) -> str:
    """One run's stored row (the run id as the one parameter)."""
    ph = "?" if dialect == "sqlite" else "%s"
    return (f"SELECT last_proposal, last_status, open_tasks, waiting_steps, workflow, "
            f"finished FROM run_state WHERE run_id = {ph}")


#: what a payload that names its action's secret arguments holds (a ``LIKE`` pattern, as
#: a parameter: a superset — the payload is read after)
SECRET_MARK_LIKE = '%"secret_arguments"%'


def run_page(dialect: Dialect, cols: str, *, kinds: int, newest: bool,
             marked: bool = False) -> str:
    """At most ``limit`` events of one run after a seq (parameters: the run id, the seq,
    ``kinds`` kinds, with ``marked`` :data:`SECRET_MARK_LIKE`, the limit): one range of
    ``events_run (run_id, seq)``; ``marked``: only the payloads naming secret arguments
    (the others are passed over by the database, not decoded)."""
    ph = "?" if dialect == "sqlite" else "%s"
    only = f" AND kind IN ({', '.join([ph] * kinds)})" if kinds else ""
    if marked:  # the pattern passes over most rows; the key is then read at the top level
        # (an argument named `secret_arguments` marks nothing: test_147)
        top = ("json_type(payload, '$.secret_arguments') = 'array'" if dialect == "sqlite"
               else f"json_typeof({pg_payload()} -> 'secret_arguments') = 'array'")
        only += f" AND payload LIKE {ph} AND {top}"
    return (f"SELECT {cols} FROM events WHERE run_id = {ph} AND seq > {ph}{only} "
            f"ORDER BY seq {'DESC' if newest else 'ASC'} LIMIT {ph}")


def counts(dialect: Dialect) -> str:
    """How many events one run has, how many distinct proposal ids it received and how
    many ``run.outcome`` it wrote (the run id as the one parameter), nothing decoded."""
    ph = "?" if dialect == "sqlite" else "%s"
    return ("SELECT COUNT(*), COUNT(DISTINCT CASE WHEN kind = 'proposal.received' "
            "THEN subject END), COUNT(CASE WHEN kind = 'run.outcome' THEN 1 END) "
            f"FROM events WHERE run_id = {ph}")


def max_step(dialect: Dialect) -> str:
    """The highest ``step`` of a proposal one run received (the run id as the one
    parameter; NULL when none): the run's range of ``events_run``, its ``proposal.received``
    only decoded by the database, one number each."""
    if dialect == "sqlite":
        return ("SELECT MAX(CAST(json_extract(payload, '$.proposal.step') AS INTEGER)) "
                "FROM events WHERE run_id = ? AND kind = 'proposal.received'")
    return ("SELECT MAX(CASE WHEN json_typeof(s) = 'number' THEN (s #>> '{}')::numeric END) "
            f"FROM (SELECT {pg_payload()} -> 'proposal' -> 'step' AS s FROM events "
            "WHERE run_id = %s AND kind = 'proposal.received') AS steps")


def state_row(row: tuple[Any, ...] | None) -> tuple[str, str, int, int, int, str] | None:
    if row is None:
        return None
    return (str(row[0] or ""), str(row[1] or ""), int(row[2]), int(row[3]), int(row[4]),
            str(row[5] or ""))


#: what decides a run's state, one value each (nulls folded to ``''`` / 0)
KEY = ("CASE WHEN COALESCE(s.open_tasks, 0) > 0 THEN 1 ELSE 0 END",
       "COALESCE(s.finished, '')",
       "CASE WHEN COALESCE(s.waiting_steps, 0) > 0 THEN 1 ELSE 0 END",
       "COALESCE(s.last_status, '')",
       "CASE WHEN substr(COALESCE(s.last_proposal, ''), 1, 5) = 'comp:' THEN 1 ELSE 0 END",
       "COALESCE(s.workflow, 0)")
StateKey = tuple[int, str, int, str, int, int]

#: the runs listed (a proposal received or a workflow started), with their state's row
LISTED = ("FROM runs r LEFT JOIN run_state s ON s.run_id = r.run_id "
          "WHERE (r.proposals > 0 OR s.workflow = 1)")
GROUPS = f"SELECT {', '.join(KEY)}, COUNT(*) {LISTED} GROUP BY {', '.join(KEY)}"


def page(dialect: Dialect, keys: list[StateKey] | None, *, newest_first: bool
         ) -> tuple[str, str, list[object]]:
    """The query of one page of listed run ids (then ``LIMIT`` / ``OFFSET``), the query of
    how many there are, and their parameters (without limit and offset)."""
    ph = "?" if dialect == "sqlite" else "%s"
    cond, args = "", list[object]()
    if keys is not None:
        one = "(" + " AND ".join(f"{k} = {ph}" for k in KEY) + ")"
        cond = " AND (" + (" OR ".join([one] * len(keys)) or "1 = 0") + ")"
        args = [v for key in keys for v in key]
    order = "DESC" if newest_first else "ASC"
    return (f"SELECT r.run_id {LISTED}{cond} ORDER BY r.first_seq {order} "
            f"LIMIT {ph} OFFSET {ph}", f"SELECT COUNT(*) {LISTED}{cond}", args)


__all__ = ["COLUMNS", "GROUPS", "KEY", "KINDS", "POSTGRES_SCHEMA", "SQLITE_SCHEMA",
           "StateKey", "counts", "from_events", "one_row", "outcome_update", "page", "refresh",
           "run_page", "state_row", "stored"]
