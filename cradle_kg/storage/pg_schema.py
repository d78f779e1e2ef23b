"""The PostgreSQL journal's schema: versioned migrations and its derived state.

Same tables and columns as the SQLite journal (:mod:`.chain`, :mod:`.sqlite_derived`), so
the events and their hashes are the same byte for byte: every event column is ``text`` or
``bigint`` (``payload`` is the canonical JSON text itself, never ``jsonb``, which would
re-serialise it, and is read as ``json``, which accepts ``\\u0000``).
``schema_migrations`` records which migration ran; ``cradle-kg db migrate`` applies the
pending ones (each in its own transaction, under an advisory lock, so two hosts migrating
at once apply each once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import pg_append, run_state_sql, tasks_sql
from .counting import (
    BUDGET_SCOPES,
    QUOTA_REACHED,
    QUOTA_SCOPE_PREFIX,
    REFUSALS_SCOPE,
    REFUSED_AGENT,
    SERVER_SCOPE_PREFIX,
    USAGE_FIELDS,
    counted_keys,
    intent_cost,
)
from .pg_connect import APPEND_LOCK
from .run_state_sql import pg_payload
from .sqlite_derived import executed_id

_C = 'COLLATE "C"'
_P = pg_payload()
#: an event's payload as JSON whose every key can be read (:func:`.run_state_sql.pg_payload`)
PAYLOAD = _P
_COST = (f"CASE WHEN json_typeof({_P} -> 'cost') = 'number' "
         f"THEN ({_P} ->> 'cost')::double precision ELSE 0 END")
_INTENTS = "FROM events WHERE kind = 'action.intent'"
_MODEL_COST = (f"CASE WHEN json_typeof({_P} -> 'cost') = 'number' "
               f"THEN ({_P} ->> 'cost')::double precision ELSE 0 END")
#: what a budget is charged by (as :data:`.sqlite_derived._CHARGES`): a reservation, or a
#: call journaled without one (``"reserved"`` is not JSON ``true``)
_CHARGES = ("FROM events WHERE kind IN ('model.reserved', 'model.called') AND "
            "(kind = 'model.reserved' OR NOT COALESCE("
            f"json_typeof({_P} -> 'reserved') = 'boolean' AND ({_P} ->> 'reserved') = 'true', "
            "false))")


#: the second of the server's clock now, as the usage buckets write a second
#: (``iso(at)[:19]``): what a counted intent's server second and a window's end are
SERVER_SECOND = ("to_char(clock_timestamp() AT TIME ZONE 'UTC', "
                 "'YYYY-MM-DD\"T\"HH24:MI:SS')")
#: the server's second of each counted intent (migration 19), written by the server in the
#: transaction that appends it: not in the chain, read again by ``audit verify`` to derive
#: the server scopes' buckets (an intent without one — appended before, copied from
#: another journal — counts in its own ``at``'s second)
INTENT_SECONDS_SCHEMA = ("CREATE TABLE intent_seconds (seq bigint PRIMARY KEY, "
                         "second text NOT NULL)",)
#: the kinds whose events' server times ``server_times`` holds (migration 20): an evidence
#: upload, counted by its collector's hourly quotas (``tests/security/test_607``) — and a
#: refused proposal's decision (one naming :data:`REFUSED_AGENT`), counted by the agent's
#: (``test_608``)
SERVER_TIMED_KINDS = ("evidence.collected",)
#: the server's clock now to the microsecond, as an event's ``at`` is written without its
#: ``Z`` (``iso(at)[:26]``): an event's server time (``server_times``)
SERVER_TIME = ("to_char(clock_timestamp() AT TIME ZONE 'UTC', "
               "'YYYY-MM-DD\"T\"HH24:MI:SS.US')")
#: the server's time of each event of :data:`SERVER_TIMED_KINDS` and each refusal
#: (migration 20), written by the server in the transaction that appends it, by kind and
#: actor as the upload quota reads it (:data:`SERVER_RECENT_SIZES_SQL`): not in the chain;
#: ``audit verify`` checks that every such event has its row and no other has one
#: (:data:`DERIVATIONS`) and derives the refusals' server buckets from the times
SERVER_TIMES_SCHEMA = (
    "CREATE TABLE server_times (seq bigint PRIMARY KEY, kind text NOT NULL, "
    "actor text NOT NULL, at text NOT NULL)",
    f"CREATE INDEX server_times_kind_actor ON server_times(kind, actor, at {_C})")
_TIMED = ", ".join(f"'{k}'" for k in SERVER_TIMED_KINDS)
#: a refused proposal's decision (what :data:`REFUSALS_SCOPE` counts)
_REFUSAL = (f"kind = 'decision.made' AND json_typeof({_P} -> '{REFUSED_AGENT}') = 'string'")
#: the rows of ``server_times`` of events the server did not time (appended before
#: migration 20, copied from another journal): each at its own ``at``
_SERVER_TIMES_DERIVED = (f"SELECT seq, kind, actor, substr(at, 1, 26) FROM events "
                         f"WHERE kind IN ({_TIMED}) OR ({_REFUSAL}) ORDER BY seq")


def _server_refusal_parts() -> list[str]:
    """The usage rows of the refusals in the server scope (:data:`SERVER_SCOPE_PREFIX` +
    :data:`REFUSALS_SCOPE`): each in the second of its server time (``server_times``),
    else of its own ``at`` (``tests/security/test_608``)."""
    return [f"SELECT '{SERVER_SCOPE_PREFIX}{REFUSALS_SCOPE}' AS scope, "
            f"{_P} ->> '{REFUSED_AGENT}' AS subject, substr(COALESCE(s.at, e.at), 1, 19) "
            "AS second, 0::double precision AS cost FROM events e "
            f"LEFT JOIN server_times s ON s.seq = e.seq WHERE e.{_REFUSAL}"]


def _server_parts() -> list[str]:
    """The usage rows of the intents in the server scopes (:data:`SERVER_SCOPE_PREFIX`):
    each in its server second (``intent_seconds``), else its own ``at``'s."""
    second = "COALESCE(s.second, substr(e.at, 1, 19))"
    source = ("FROM events e LEFT JOIN intent_seconds s ON s.seq = e.seq "
              "WHERE e.kind = 'action.intent'")
    return ([f"SELECT '{SERVER_SCOPE_PREFIX}*' AS scope, '' AS subject, {second} AS second, "
             f"{_COST} AS cost {source}"]
            + [f"SELECT '{SERVER_SCOPE_PREFIX}{f}', {_P} ->> '{f}', {second}, {_COST} "
               f"{source} AND json_typeof({_P} -> '{f}') = 'string'" for f in USAGE_FIELDS])


def _aggregated(parts: list[str]) -> str:
    running = f"OVER (PARTITION BY scope, subject ORDER BY second {_C} ROWS UNBOUNDED PRECEDING)"
    return (f"SELECT scope, subject, second, COUNT(*)::bigint, "
            f"(SUM(COUNT(*)) {running})::bigint, SUM(cost)::double precision, "
            f"(SUM(SUM(cost)) {running})::double precision FROM ({' UNION ALL '.join(parts)}) "
            f"u GROUP BY scope, subject, second ORDER BY scope {_C}, subject {_C}, second {_C}")


def _usage_derived(*, budgets: bool, refusals: bool = False, server: bool = False) -> str:
    """The usage rows computed from the events (with the budget scopes' from migration 5;
    with an agent's refused proposals', :data:`.counting.REFUSALS_SCOPE`, since they are
    counted: no event written before names ``refused_agent``, so the rows a journal holds
    are the same either way and no migration rebuilds them; with the server scopes',
    :data:`.counting.SERVER_SCOPE_PREFIX`, since migration 19)."""
    parts = (
        [f"SELECT '*' AS scope, '' AS subject, substr(at, 1, 19) AS second, {_COST} AS cost "
         f"{_INTENTS}"]
        + [f"SELECT '{f}', {_P} ->> '{f}', substr(at, 1, 19), {_COST} {_INTENTS} "
           f"AND json_typeof({_P} -> '{f}') = 'string'" for f in USAGE_FIELDS])
    if budgets:
        parts += ([f"SELECT '{BUDGET_SCOPES['invocation']}', run_id, substr(at, 1, 19), "
                   f"{_MODEL_COST} {_CHARGES}"]
                  + [f"SELECT '{BUDGET_SCOPES[f]}', {_P} ->> '{f}', substr(at, 1, 19), "
                     f"{_MODEL_COST} {_CHARGES} AND json_typeof({_P} -> '{f}') = 'string'"
                     for f in ("tenant", "workflow")])
    if refusals:
        parts.append(f"SELECT '{REFUSALS_SCOPE}', {_P} ->> '{REFUSED_AGENT}', "
                     "substr(at, 1, 19), 0::double precision FROM events WHERE kind = "
                     f"'decision.made' AND json_typeof({_P} -> '{REFUSED_AGENT}') = 'string'")
        # a quota's records (``quota.reached``): none was written before they were counted
        parts.append(f"SELECT '{QUOTA_SCOPE_PREFIX}' || ({_P} ->> 'quota'), "
                     f"{_P} ->> 'identity', substr(at, 1, 19), 0::double precision FROM "
                     f"events WHERE kind = '{QUOTA_REACHED}' AND json_typeof({_P} -> 'quota') "
                     f"= 'string' AND json_typeof({_P} -> 'identity') = 'string'")
    if server:  # migration 19: the intents again, in the server's seconds; 20: refusals
        parts += _server_parts() + _server_refusal_parts()
    return _aggregated(parts)


_USAGE_DERIVED = _usage_derived(budgets=True)
_USAGE_INSERT_ALL = ("INSERT INTO usage(scope, subject, second, calls, total_calls, cost, "
                     "total_cost) ")
#: the refusals' server buckets derived again from ``server_times`` (migration 20; what a
#: test that ages the recorded seconds runs after)
SERVER_REFUSALS_REBUILD = (
    f"DELETE FROM usage WHERE scope = '{SERVER_SCOPE_PREFIX}{REFUSALS_SCOPE}'",
    _USAGE_INSERT_ALL + _aggregated(_server_refusal_parts()))


#: the outcomes of a run by proposal id (:meth:`.postgresql.PostgresJournal.latest_outcome`
#: reads it with the same expression), as migration 4 indexed it: an outcome holding a NUL
#: could not be indexed, so it was refused at its append
_OUTCOME_PROPOSAL_4 = "(payload::json -> 'outcome' ->> 'proposal_id')"
OUTCOME_PROPOSAL = f"({_P} -> 'outcome' ->> 'proposal_id')"
#: an action's decisions (``approval.decided``) in seq order (SQLite's format 13 has the
#: same index, :mod:`.chain`)
DECIDED_INDEX = ("CREATE INDEX events_subject_decided ON events(subject, seq) "
                 "WHERE kind = 'approval.decided'")
OUTCOME_INDEX = (f"CREATE INDEX events_outcome ON events(run_id, {OUTCOME_PROPOSAL}, seq) "
                 "WHERE kind = 'run.outcome'")


#: a quota's count (as :data:`.counting.RECENT_SIZES_SQL`): the newest events of a kind by
#: an actor from a time on, newest first, their ``at`` and the payload's ``bytes`` — one
#: range of ``events_kind_actor`` read backwards, at most the limit's rows (NULL: none).
#: The times compare byte-wise (``"C"``), whatever the database's collation
RECENT_SIZES_SQL = (
    f"SELECT at, CASE WHEN json_typeof({_P} -> 'bytes') = 'number' "
    f"THEN ({_P} ->> 'bytes')::numeric END FROM events "
    f"WHERE kind = %s AND actor = %s AND at {_C} >= %s ORDER BY at {_C} DESC LIMIT %s")
KIND_ACTOR_INDEX = f"CREATE INDEX events_kind_actor ON events(kind, actor, at {_C})"


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


#: the ``written`` values (JSON arrays of tokens, the first a string) of the latest
#: ``lineage.traced`` of a run about an action before an observation of it (as
#: :data:`.sqlite_derived.LINEAGE_WRITTEN_SQL`; ``{execution}``, ``{run}``, ``{seq}``: the
#: observation's)
_TRACED_WRITTEN = (
    "json_array_elements(COALESCE((SELECT CASE WHEN json_typeof(x.p -> 'written') = 'array' "
    "THEN x.p -> 'written' END FROM (SELECT " + pg_payload("t.payload") + " AS p FROM events "
    "t WHERE t.subject = {execution} AND t.kind = 'lineage.traced' AND t.run_id = {run} AND "
    "t.seq < {seq} ORDER BY t.seq DESC LIMIT 1) x), '[]'::json)) w")
_WRITTEN_ROW = "json_typeof(w) = 'array' AND json_typeof(w -> 0) = 'string'"
#: one observation's rows (parameters: its seq, execution id, run, seq)
LINEAGE_WRITTEN_SQL = (
    "INSERT INTO lineage_written(first, value, seq) SELECT w ->> 0, w::text, %s FROM "
    + _TRACED_WRITTEN.format(execution="%s", run="%s", seq="%s")
    + f" WHERE {_WRITTEN_ROW} ON CONFLICT ((md5(value))) DO NOTHING")
_LINEAGE_WRITTEN_DERIVED = (
    f"SELECT DISTINCT ON (value) first, value, seq FROM (SELECT w ->> 0 AS first, w::text "
    f"{_C} AS value, o.seq FROM events o, "
    + _TRACED_WRITTEN.format(
        execution=f"({pg_payload('o.payload')} -> 'observation' ->> 'execution_id')",
        run="o.run_id", seq="o.seq")
    + f" WHERE o.kind = 'action.observed' AND {_WRITTEN_ROW}) y ORDER BY value, seq")
#: the written values whose first token is one of a list, recorded before a seq
#: (parameters: the seq, the tokens)
LINEAGE_WRITTEN_READ = ("SELECT value FROM lineage_written WHERE seq < %s AND "
                        "first = ANY(%s::text[])")
#: the table (a value's key is its digest: a token may be longer than a btree entry)
LINEAGE_WRITTEN_SCHEMA = (
    "CREATE TABLE lineage_written (first text NOT NULL, value text NOT NULL, "
    "seq bigint NOT NULL)",
    "CREATE UNIQUE INDEX lineage_written_value ON lineage_written (md5(value))",
    "CREATE INDEX lineage_written_first ON lineage_written USING hash (first)")

MIGRATIONS = (
    Migration(1, "events-head-and-derived-state", (
        """CREATE TABLE events (
            seq          bigint PRIMARY KEY,
            id           text NOT NULL UNIQUE,
            run_id       text NOT NULL,
            kind         text NOT NULL,
            subject      text NOT NULL,
            actor        text NOT NULL,
            at           text NOT NULL,
            payload      text NOT NULL,
            payload_hash text NOT NULL,
            prev_hash    text NOT NULL,
            hash         text NOT NULL,
            idem_key     text)""",
        "CREATE UNIQUE INDEX events_idem_key ON events(idem_key) WHERE idem_key IS NOT NULL",
        "CREATE INDEX events_run ON events(run_id, seq)",
        "CREATE INDEX events_subject ON events(subject, seq)",
        "CREATE INDEX events_kind ON events(kind, seq)",
        """CREATE TABLE head (
            one  integer PRIMARY KEY CHECK (one = 1),
            seq  bigint NOT NULL,
            hash text NOT NULL)""",
        """CREATE TABLE usage (
            scope text NOT NULL, subject text NOT NULL, second text NOT NULL,
            calls bigint NOT NULL, cost double precision NOT NULL,
            PRIMARY KEY (scope, subject, second))""",
        "CREATE TABLE open_intents (seq bigint PRIMARY KEY, subject text NOT NULL)",
        "CREATE INDEX open_intents_subject ON open_intents(subject)",
        """CREATE TABLE approval_ids (
            approval_id text PRIMARY KEY, subject text NOT NULL, seq bigint NOT NULL)""",
        """CREATE TABLE runs (
            run_id text PRIMARY KEY, first_seq bigint NOT NULL, proposals bigint NOT NULL)""",
        "CREATE INDEX runs_first ON runs(first_seq)",
    )),
    # what a run's state is decided from, derived from the events already written
    Migration(2, "run-state", (
        *run_state_sql.POSTGRES_SCHEMA,
        f"INSERT INTO run_state({run_state_sql.COLUMNS}) "
        f"{run_state_sql.from_events('postgresql')}")),
    # the usage buckets keep running totals, so a rate limit reads two rows at any window
    Migration(3, "usage-running-totals", (
        "DROP TABLE usage",
        """CREATE TABLE usage (
            scope text NOT NULL, subject text NOT NULL, second text NOT NULL,
            calls bigint NOT NULL, total_calls bigint NOT NULL,
            cost double precision NOT NULL, total_cost double precision NOT NULL,
            PRIMARY KEY (scope, subject, second))""",
        _USAGE_INSERT_ALL + _usage_derived(budgets=False))),
    # a proposal's last outcome in its run (every submit asks: is this proposal answered?)
    # in one index probe: through ``events_run`` it read every event of the run, which
    # grows with the run (an MCP session is one run) and, past ~100 k events, the planner
    # read them in a bitmap scan and sorted them
    Migration(4, "outcome-index", (
        f"CREATE INDEX events_outcome ON events(run_id, {_OUTCOME_PROPOSAL_4}, seq) "
        "WHERE kind = 'run.outcome'",)),
    # budget spend: the model calls charged per tenant, workflow and run, in usage buckets
    # of their own (``budget.<level>``), derived from the events already written (calls
    # made before reservations: ``model.called``); under the append lock, so that no
    # append of a worker still running lands between the rebuild and the commit
    Migration(5, "budget-usage", (
        f"SELECT pg_advisory_xact_lock({APPEND_LOCK}, 0)",
        "DELETE FROM usage",
        _USAGE_INSERT_ALL + _USAGE_DERIVED)),
    # the outcome index reads the payload as every derivation does (a NUL in a tool's
    # output or a reason no longer keeps an outcome out of the journal)
    Migration(6, "outcome-index-nul", (
        "DROP INDEX events_outcome",
        OUTCOME_INDEX)),
    # an identity's recent events of one kind (its evidence uploads of the last hour, for
    # its quota) in one index range, as SQLite's ``events_kind_actor`` finds them: through
    # ``events_kind`` the count read every event of the kind, every identity's, ever
    Migration(7, "kind-actor-index", (KIND_ACTOR_INDEX,)),
    # the human tasks opened (and the seq of each one's resolution), each run's repair
    # count and the approvals not decided yet, derived from the events already written
    # (under the append lock, as migration 5): the inbox and the repair budget read them
    # instead of folding every task or approval event of the journal, or every event of
    # the run
    Migration(8, "inbox-and-repairs", (
        f"SELECT pg_advisory_xact_lock({APPEND_LOCK}, 0)",
        *tasks_sql.POSTGRES_SCHEMA,
        *(f"INSERT INTO {t}({tasks_sql.COLUMNS[t]}) {tasks_sql.from_events('postgresql', t)}"
          for t in tasks_sql.TABLES_8))),
    # an action's recorded outcome (the answer to a resubmitted key) in one probe: through
    # ``events_subject`` the newest-first walk read one row per ``action.replayed`` written
    # about the action since (``tests/security/test_85``)
    Migration(9, "outcome-subject-index", (
        "CREATE INDEX events_subject_outcome ON events(subject, seq) "
        "WHERE kind = 'run.outcome'",)),
    # the key the digests of secret arguments are keyed with (HMAC-SHA256), beside the
    # chain: one row, written by the first worker that needs it (``digest_key``), copied
    # by ``journal copy``, never in an event, a projection or a view (``test_135``)
    Migration(10, "digest-key", (
        "CREATE TABLE journal_keys (name text PRIMARY KEY, key bytea NOT NULL)",)),
    # an append in one round trip: the lock, the head, the if_last / if_new_run guards,
    # the chain's hashes, the events and the head in one server-side function
    # (:mod:`.pg_append`), so the append lock is never held while the server waits for
    # its client
    Migration(11, "append-function", (pg_append.function_sql(run_end=False),)),
    # who may never decide each approval (its request's ``excluded``), derived from the
    # events already written (under the append lock, as migration 8): an approver's inbox
    # leaves out what they are excluded from in its query (``tests/security/test_215``)
    Migration(12, "approval-exclusions", (
        f"SELECT pg_advisory_xact_lock({APPEND_LOCK}, 0)",
        *tasks_sql.POSTGRES_EXCLUSIONS_SCHEMA,
        *(f"INSERT INTO {t}({tasks_sql.COLUMNS[t]}) {tasks_sql.from_events('postgresql', t)}"
          for t in tasks_sql.EXCLUSION_TABLES))),
    # the workflow runs on their way to their first human step (started, no
    # ``human.requested``, no end), derived from the events already written (under the
    # append lock, as migration 8): counted in their agent's ``waiting_per_agent`` under
    # the lock, so two workers starting runs at once no longer pass it
    # (``tests/security/test_249``)
    Migration(13, "starting-runs", (
        f"SELECT pg_advisory_xact_lock({APPEND_LOCK}, 0)",
        *tasks_sql.POSTGRES_STARTING_SCHEMA,
        *(f"INSERT INTO {t}({tasks_sql.COLUMNS[t]}) {tasks_sql.from_events('postgresql', t)}"
          for t in tasks_sql.STARTING_TABLES))),
    # the approvals asked under an agent's key that a person approved and whose action has
    # not run yet, derived from the events already written (under the append lock, as
    # migration 8): other arguments under the key are refused as while the approval waits
    # (``tests/security/test_284``)
    Migration(14, "unrun-approvals", (
        f"SELECT pg_advisory_xact_lock({APPEND_LOCK}, 0)",
        *tasks_sql.POSTGRES_UNRUN_SCHEMA,
        *(f"INSERT INTO {t}({tasks_sql.COLUMNS[t]}) {tasks_sql.from_events('postgresql', t)}"
          for t in tasks_sql.UNRUN_TABLES))),
    # the append function checks an ``if_run_open`` append's runs have not ended, under its
    # lock, from ``run_state``: an approval's use, a request for one and a walk's steps
    # take one round trip instead of two (the guard was read in a first trip)
    Migration(15, "append-run-end-guard", (
        f"DROP FUNCTION IF EXISTS {pg_append.OLD_SIGNATURE}",
        pg_append.function_sql(run_end=True))),
    # and that no approval an append's intents use has been revoked (ApprovalGuard, a
    # use's side): an intent under an approval takes one round trip instead of two (the
    # guard was probed in a first trip); a revoke's own guard still takes two
    Migration(16, "append-approval-guard", (
        f"DROP FUNCTION IF EXISTS {pg_append.RUN_END_SIGNATURE}", pg_append.FUNCTION_SQL)),
    # an action's decisions, the revokes among them: what a use's guard reads under the
    # append lock (``cradle_append``'s probe, unchanged, plans through it) — through
    # ``events_subject`` it read every other run's request of the action since the
    # approval's (``bench/bench_approval_guards.py --other-run-requests``)
    Migration(17, "decided-subject-index", (DECIDED_INDEX,)),
    # the values executed actions carried on untrusted content only, journal-wide, derived
    # from the events already written (under the append lock, as migration 8): a trusted
    # read of a later run that returns one is not its origin (``tests/security/test_496``)
    Migration(18, "lineage-written", (
        f"SELECT pg_advisory_xact_lock({APPEND_LOCK}, 0)", *LINEAGE_WRITTEN_SCHEMA,
        f"INSERT INTO lineage_written(first, value, seq) {_LINEAGE_WRITTEN_DERIVED}")),
    # a limit's window on the server's clock: each counted intent is counted again in the
    # server scopes, in the second of the server's clock at its append (``intent_seconds``);
    # the intents already written count there in their own ``at``'s second
    # (``tests/security/test_549``)
    Migration(19, "server-seconds", (
        f"SELECT pg_advisory_xact_lock({APPEND_LOCK}, 0)", *INTENT_SECONDS_SCHEMA,
        f"DELETE FROM usage WHERE scope LIKE '{SERVER_SCOPE_PREFIX}%'",
        _USAGE_INSERT_ALL + _aggregated(_server_parts()))),
    # an evidence upload's quotas on the server's clock: each upload's server second
    # (``server_times``); the events already written at their own ``at``
    # (``tests/security/test_607``)
    Migration(20, "server-times", (
        f"SELECT pg_advisory_xact_lock({APPEND_LOCK}, 0)", *SERVER_TIMES_SCHEMA,
        f"INSERT INTO server_times(seq, kind, actor, at) {_SERVER_TIMES_DERIVED}",
        *SERVER_REFUSALS_REBUILD)),
)
LATEST = MIGRATIONS[-1].version
#: every migration's statements, in order (what :mod:`.pg_objects` derives functions from)
STATEMENTS: tuple[str, ...] = tuple(s for m in MIGRATIONS for s in m.statements)

MIGRATIONS_TABLE = ("CREATE TABLE IF NOT EXISTS schema_migrations ("
                    "version integer PRIMARY KEY, name text NOT NULL)")

# --- derived state, kept in the append's transaction ---------------------------------


_REFRESH = run_state_sql.refresh("postgresql")
#: one intent in every scope it counts for (as :data:`.sqlite_derived.USAGE_STATEMENTS`,
#: one statement for all its scopes: they are distinct keys): each scope's second's row,
#: its running totals from the previous second's. Parameters: the scopes, their subjects
#: (two arrays), the second, the cost.
_USAGE_INSERT = (
    "INSERT INTO usage(scope, subject, second, calls, total_calls, cost, total_cost) "
    "SELECT k.scope, k.subject, %(second)s, 1, COALESCE(p.total_calls, 0) + 1, %(cost)s, "
    "COALESCE(p.total_cost, 0) + %(cost)s "
    "FROM unnest(%(scopes)s::text[], %(subjects)s::text[]) AS k(scope, subject) "
    "LEFT JOIN LATERAL (SELECT total_calls, total_cost FROM usage u "
    "WHERE u.scope = k.scope AND u.subject = k.subject AND u.second < %(second)s "
    "ORDER BY u.second DESC LIMIT 1) p ON true "
    "ON CONFLICT (scope, subject, second) DO UPDATE SET calls = usage.calls + 1, "
    "total_calls = usage.total_calls + 1, cost = usage.cost + excluded.cost, "
    "total_cost = usage.total_cost + excluded.cost")
#: ... then the running totals of any later second of those scopes (none, unless the
#: intent arrived out of time order)
_USAGE_LATER = (
    "UPDATE usage u SET total_calls = u.total_calls + 1, total_cost = u.total_cost + %(cost)s "
    "FROM unnest(%(scopes)s::text[], %(subjects)s::text[]) AS k(scope, subject) "
    "WHERE u.scope = k.scope AND u.subject = k.subject AND u.second > %(second)s")
#: the running totals at the scope's latest second and before the window's first second
#: (parameters: scope, subject, scope, subject, the window's first second)
USAGE_WINDOW_SQL = (
    "SELECT COALESCE(l.total_calls, 0), COALESCE(l.total_cost, 0), "
    "COALESCE(b.total_calls, 0), COALESCE(b.total_cost, 0) FROM (SELECT 1) one "
    "LEFT JOIN (SELECT total_calls, total_cost FROM usage WHERE scope = %s AND "
    "subject = %s ORDER BY second DESC LIMIT 1) l ON true "
    "LEFT JOIN (SELECT total_calls, total_cost FROM usage WHERE scope = %s AND "
    "subject = %s AND second < %s ORDER BY second DESC LIMIT 1) b ON true")

def _server_usage_insert(seconds: str, second: str = "second") -> str:
    """:data:`_SERVER_USAGE_INSERT`, its event's server second written by ``seconds`` (an
    ``INSERT`` whose one parameter is the seq, returning ``second``)."""
    return f"WITH s AS ({seconds} RETURNING {second} AS second) " + _SERVER_USAGE_ROWS


_SERVER_USAGE_ROWS = (
    "INSERT INTO usage(scope, subject, second, calls, total_calls, cost, total_cost) "
    "SELECT k.scope, k.subject, s.second, 1, COALESCE(p.total_calls, 0) + 1, %s, "
    "COALESCE(p.total_cost, 0) + %s "
    "FROM s CROSS JOIN unnest(%s::text[], %s::text[]) AS k(scope, subject) "
    "LEFT JOIN LATERAL (SELECT total_calls, total_cost FROM usage u "
    "WHERE u.scope = k.scope AND u.subject = k.subject AND u.second < s.second "
    "ORDER BY u.second DESC LIMIT 1) p ON true "
    "ON CONFLICT (scope, subject, second) DO UPDATE SET calls = usage.calls + 1, "
    "total_calls = usage.total_calls + 1, cost = usage.cost + excluded.cost, "
    "total_cost = usage.total_cost + excluded.cost")
#: one intent's server second (its seq; :data:`SERVER_SECOND`), then the intent in each
#: of its server scopes' buckets of that second, as :data:`_USAGE_INSERT` (parameters: the
#: seq, the cost twice, the scopes, their subjects)
_SERVER_USAGE_INSERT = _server_usage_insert(
    f"INSERT INTO intent_seconds(seq, second) VALUES (%s, {SERVER_SECOND})")
#: ... then the running totals of any later second of those scopes (parameters: the cost
#: twice, the scopes, their subjects, the seq)
_SERVER_USAGE_LATER = (
    "UPDATE usage u SET total_calls = u.total_calls + 1, total_cost = u.total_cost + %s "
    "FROM unnest(%s::text[], %s::text[]) AS k(scope, subject), intent_seconds s "
    "WHERE u.scope = k.scope AND u.subject = k.subject AND s.seq = %s "
    "AND u.second > s.second")
#: a refusal's server time (``server_times``) and its server bucket (that time's second),
#: as :data:`_SERVER_USAGE_INSERT` and :data:`_SERVER_USAGE_LATER` (the same parameters)
_SERVER_REFUSAL_INSERT = _server_usage_insert(
    "INSERT INTO server_times(seq, kind, actor, at) "
    f"SELECT seq, kind, actor, {SERVER_TIME} FROM events WHERE seq = %s", "substr(at, 1, 19)")
_SERVER_REFUSAL_LATER = _SERVER_USAGE_LATER.replace(
    "intent_seconds s", "server_times s").replace("> s.second", "> substr(s.at, 1, 19)")
#: :data:`USAGE_WINDOW_SQL` of a server scope, its window the seconds up to the server's
#: clock now (parameters: scope, subject, scope, subject, the window's length in seconds)
SERVER_WINDOW_SQL = USAGE_WINDOW_SQL.replace(
    "second < %s", "second < to_char((clock_timestamp() - make_interval(secs => %s)) "
    "AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')")

#: one event's server time (:data:`SERVER_TIMED_KINDS`; parameter: its seq), after the
#: append's events are inserted
_SERVER_TIME_INSERT = ("INSERT INTO server_times(seq, kind, actor, at) "
                       f"SELECT seq, kind, actor, {SERVER_TIME} FROM events WHERE seq = %s")
_TIME_FORMAT = "'YYYY-MM-DD\"T\"HH24:MI:SS.US'"
#: :data:`RECENT_SIZES_SQL` on the server's clock: the newest events of a kind by an actor
#: whose server time is within the window up to the server's clock now (after its start,
#: as :func:`cradle_kg.evidence.window_start`), newest first, as (each one's time on the
#: runtime's clock, bytes): the runtime's now less the event's age on the server's clock,
#: so that when a window frees up is said on the runtime's clock (parameters: the
#: runtime's now, kind, actor, the window's length in seconds, the most rows; index
#: ``server_times_kind_actor``)
SERVER_RECENT_SIZES_SQL = (
    "WITH c AS (SELECT clock_timestamp() AT TIME ZONE 'UTC' AS now) "
    "SELECT to_char(%s::timestamptz AT TIME ZONE 'UTC' - (c.now - s.at::timestamp), "
    f"{_TIME_FORMAT}) || 'Z', CASE WHEN json_typeof({_P} -> 'bytes') = 'number' "
    f"THEN ({_P} ->> 'bytes')::numeric END FROM c CROSS JOIN server_times s JOIN events e "
    f"ON e.seq = s.seq WHERE s.kind = %s AND s.actor = %s AND s.at {_C} > "
    f"to_char(c.now - make_interval(secs => %s), {_TIME_FORMAT}) "
    f"ORDER BY s.at {_C} DESC, s.seq DESC LIMIT %s")

#: the subject of a scope with the largest running total of cost, and its totals (as
#: :data:`.sqlite_derived.USAGE_TOP_SQL`; parameters: the scope, twice)
USAGE_TOP_SQL = (
    "SELECT u.subject, u.total_calls, u.total_cost, 0, 0.0 FROM usage u WHERE u.scope = %s "
    "AND u.second = (SELECT MAX(l.second) FROM usage l WHERE l.scope = %s "
    f"AND l.subject = u.subject) ORDER BY u.total_cost DESC, u.subject {_C} DESC LIMIT 1")

Statement = tuple[str, Any]


#: rows per multi-row ``INSERT`` (a statement takes at most 65,535 parameters)
CHUNK = 1000


def _chunks(rows: Sequence[tuple[Any, ...]]) -> list[Sequence[tuple[Any, ...]]]:
    return [rows[i:i + CHUNK] for i in range(0, len(rows), CHUNK)]


def events_statements(rows: Sequence[tuple[Any, ...]]) -> list[Statement]:
    """The ``INSERT`` of every event row of an append (12 columns each, in order): one
    statement per :data:`CHUNK` rows."""
    out: list[Statement] = []
    for chunk in _chunks(rows):
        marks = ", ".join(["(" + ",".join(["%s"] * 12) + ")"] * len(chunk))
        out.append(("INSERT INTO events(seq, id, run_id, kind, subject, actor, at, payload, "
                    f"payload_hash, prev_hash, hash, idem_key) VALUES {marks}",
                    tuple(v for row in chunk for v in row)))
    return out


def runs_statements(runs: dict[str, list[int]]) -> list[Statement]:
    """The ``runs`` rows of one append, one upsert per :data:`CHUNK` runs (``runs``:
    :func:`.counting.count_run` per event; as :func:`.sqlite_derived.apply_runs`)."""
    out: list[Statement] = []
    rows = [(run_id, first, proposals) for run_id, (first, proposals) in runs.items()]
    # runs whose proposals this append does not count (an observation, an outcome) change
    # only when new: no update of the existing row (no new row version, no WAL for it)
    for counted, conflict in ((True, "DO UPDATE SET proposals = runs.proposals + "
                                     "excluded.proposals"), (False, "DO NOTHING")):
        for chunk in _chunks([r for r in rows if bool(r[2]) is counted]):
            marks = ", ".join(["(%s, %s, %s)"] * len(chunk))
            out.append((f"INSERT INTO runs(run_id, first_seq, proposals) VALUES {marks} "
                        f"ON CONFLICT (run_id) {conflict}",
                        tuple(v for row in chunk for v in row)))
    return out


def derived_statements(*, seq: int, run_id: str, kind: str, subject: str, at: str,
                       payload: dict[str, Any], settled: bool = False) -> list[Statement]:
    """The statements that update every derived table but ``runs`` for one event (as
    :func:`.sqlite_derived.apply` does on SQLite; ``runs``: :func:`runs_statements` once
    per append). They run after every event of the append is inserted: a ``run_state``
    recomputation reads the append's later events too, and the fast path of a later
    outcome sets what the recomputation would (the run's last counted outcome).
    ``settled``: as :func:`.sqlite_derived.apply`'s."""
    out: list[Statement] = []
    if kind in run_state_sql.KINDS:
        fast = run_state_sql.outcome_update("postgresql", payload) \
            if kind == "run.outcome" else None
        if fast is not None:
            out.append((fast[0], (run_id, *fast[1])))
        else:  # rare (people's events): the run's row, recomputed from its own events
            out.extend((statement, (run_id,)) for statement in _REFRESH)
    if kind in tasks_sql.KINDS:
        out.extend(tasks_sql.statements("postgresql", seq=seq, run_id=run_id, kind=kind,
                                        subject=subject, payload=payload))
    keys = counted_keys(kind, run_id, payload)
    if keys:
        args = {"scopes": [k[0] for k in keys], "subjects": [k[1] for k in keys],
                "second": at[:19], "cost": intent_cost(payload)}
        out.append((_USAGE_INSERT, args))
        out.append((_USAGE_LATER, args))
        if kind == "action.intent":  # and in the server's second (SERVER_SCOPE_PREFIX)
            cost = intent_cost(payload)
            scopes = [SERVER_SCOPE_PREFIX + k[0] for k in keys]
            subjects = [k[1] for k in keys]
            out.append((_SERVER_USAGE_INSERT, (seq, cost, cost, scopes, subjects)))
            out.append((_SERVER_USAGE_LATER, (cost, scopes, subjects, seq)))
        elif kind == "decision.made":  # a refusal: and in the server's second (test_608)
            scopes = [SERVER_SCOPE_PREFIX + k[0] for k in keys]
            subjects = [k[1] for k in keys]
            out.append((_SERVER_REFUSAL_INSERT, (seq, 0.0, 0.0, scopes, subjects)))
            out.append((_SERVER_REFUSAL_LATER, (0.0, scopes, subjects, seq)))
    if kind in SERVER_TIMED_KINDS:  # its server second (test_607)
        out.append((_SERVER_TIME_INSERT, (seq,)))
    if kind == "action.intent":
        if not settled:
            out.append(("INSERT INTO open_intents(seq, subject) VALUES (%s, %s)",
                        (seq, subject)))
        out.extend(tasks_sql.ran("postgresql", run_id=run_id, payload=payload))
    elif kind == "run.outcome":
        out.append(("DELETE FROM open_intents WHERE subject = %s", (subject,)))
    elif kind == "approval.requested":
        approval = payload.get("approval")
        approval_id = approval.get("id") if isinstance(approval, dict) else None
        if isinstance(approval_id, str):
            out.append(("INSERT INTO approval_ids(approval_id, subject, seq) "
                        "VALUES (%s, %s, %s) ON CONFLICT (approval_id) DO NOTHING",
                        (approval_id, subject, seq)))
    elif kind == "action.observed":
        execution = executed_id(payload)
        if execution is not None:  # one probe of ``events_subject``
            out.append((LINEAGE_WRITTEN_SQL, (seq, execution, run_id, seq)))
    return out


#: (table, stored rows in key order, the same rows computed from the events)
DERIVATIONS = (
    ("usage",
     f"SELECT scope, subject, second, calls, total_calls, cost, total_cost FROM usage "
     f"ORDER BY scope {_C}, subject {_C}, second {_C}",
     _usage_derived(budgets=True, refusals=True, server=True)),
    ("open_intents", "SELECT seq, subject FROM open_intents ORDER BY seq",
     "SELECT i.seq, i.subject FROM events i WHERE i.kind = 'action.intent' AND NOT EXISTS "
     "(SELECT 1 FROM events o WHERE o.subject = i.subject AND o.kind = 'run.outcome' "
     "AND o.seq > i.seq) ORDER BY i.seq"),
    ("approval_ids", f"SELECT approval_id, subject, seq FROM approval_ids "
     f"ORDER BY approval_id {_C}",
     f"SELECT DISTINCT ON (a) a, subject, seq FROM (SELECT ({_P} -> 'approval' ->> 'id') "
     f"{_C} AS a, "
     f"subject, seq FROM events WHERE kind = 'approval.requested' AND "
     f"json_typeof({_P} -> 'approval' -> 'id') = 'string') x ORDER BY a, seq"),
    ("runs", f"SELECT run_id, first_seq, proposals FROM runs ORDER BY run_id {_C}",
     f"SELECT run_id, MIN(seq), SUM(CASE WHEN kind = 'proposal.received' THEN 1 ELSE 0 "
     f"END)::bigint FROM events GROUP BY run_id ORDER BY run_id {_C}"),
    ("run_state", run_state_sql.stored("postgresql"), run_state_sql.from_events("postgresql")),
    *((t, tasks_sql.stored("postgresql", t), tasks_sql.from_events("postgresql", t))
      for t in tasks_sql.TABLES),
    ("lineage_written", f"SELECT first, value, seq FROM lineage_written ORDER BY value {_C}",
     _LINEAGE_WRITTEN_DERIVED),
    # the server's times: one row per event of SERVER_TIMED_KINDS and refusal, its seq,
    # kind and actor compared (SERVER_TIMES_EXACT), its time the server's (a copy's: its at)
    ("server_times", "SELECT seq, kind, actor, at FROM server_times ORDER BY seq",
     _SERVER_TIMES_DERIVED),
)
#: the ``server_times`` columns :data:`DERIVATIONS` compares with the events (the time is
#: the server's clock at the append: not derived)
SERVER_TIMES_EXACT = 3

# --- the catalog ------------------------------------------------------------------------

#: a function's line of :data:`.pg_objects.CATALOG_SQL` (``p``: its ``pg_proc`` row): its
#: name, a digest of its body and one of its signature, kind, security, volatility and
#: settings
FUNCTION_LINE = (
    "'function ' || p.proname || ' ' || md5(p.prosrc) || ' ' || md5("
    "pg_get_function_arguments(p.oid) || ' -> ' || pg_get_function_result(p.oid) || ' ' "
    "|| p.prokind::text || p.prosecdef::text || p.provolatile::text "
    "|| coalesce(array_to_string(p.proconfig, ','), ''))")

__all__ = ["DECIDED_INDEX", "DERIVATIONS", "FUNCTION_LINE", "KIND_ACTOR_INDEX", "LATEST",
           "LINEAGE_WRITTEN_READ", "LINEAGE_WRITTEN_SCHEMA", "LINEAGE_WRITTEN_SQL",
           "MIGRATIONS", "MIGRATIONS_TABLE", "OUTCOME_INDEX", "OUTCOME_PROPOSAL", "PAYLOAD",
           "RECENT_SIZES_SQL", "SERVER_SECOND", "SERVER_WINDOW_SQL", "STATEMENTS",
           "USAGE_TOP_SQL", "USAGE_WINDOW_SQL", "Migration",
           "Statement", "derived_statements", "events_statements", "runs_statements"]
