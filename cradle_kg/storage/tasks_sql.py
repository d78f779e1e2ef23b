"""The derived ``human_tasks``, ``undecided_approvals``, ``open_steps``, ``repairs`` and
``budget_sets`` tables, kept in the journal's own transaction on both backends (issue 17:
what the inbox, the repair budget and a workflow's budget check read, never a fold of the
journal).

==============  =====================================================================
human_tasks     one row per ``human_task.opened`` whose payload names a ``task_id``:
                its seq, the task id, its run, and the seq of the newest
                ``human_task.resolved`` about it (its subject and its payload's
                ``task_id`` both the task id — as ``resolve_task`` writes it and reads
                it back), NULL while it is open. A resolution closes every opening of
                its task, the ones written after it too (``resolve_task`` refuses to
                resolve a task twice: the one read the old fold gave)
undecided_      each approval id's first ``approval.requested`` (its id, its subject —
approvals       ``approval:<digest>`` — and its seq) with no ``approval.decided`` of
                that id about the same subject after it: the approvals the inbox
                folds (it decodes their digests' events, not every approval's ever
                asked)
open_steps      each ``human.requested`` (its seq, run, step and input hash, both text)
                with no ``human.decided`` of the same run, step and input hash and no
                end (``workflow.completed|failed``) of its run, before or after it: the
                human steps the inbox lists
repairs         per run with one: how many ``run.outcome`` events say ``repair`` (what
                the repair budget counts)
budget_sets     per subject of ``budget.set`` events (``budget:<key>``): the seq of its
                first and of its newest — the budgets in force, read at every model
                call a workflow makes (the newest per key, in the order keys were set)
approval_       each (approval id, identity) an ``approval.requested`` of that id names
exclusions      in its ``excluded`` (text items of a list): who may never decide it —
                what an approver's inbox leaves out in its query (``test_215``;
                SQLite format 10, PostgreSQL migration 12)
starting_runs   each run whose first ``workflow.started`` naming its ``agent`` (text)
                records a human step among its ``steps`` (``[id, "human"]``), with no
                ``human.requested`` and no end (``workflow.completed|failed``) in the
                run, before or after it: its run id, agent and the start's seq — the
                runs on their way to their first human step, counted in the agent's
                ``waiting_per_agent`` (``test_249``; SQLite format 11, PostgreSQL
                migration 13)
unrun_          each approval whose first request was asked under its agent's
approvals       idempotency key (``proposal.action.idempotency_key``, text), that an
                ``approval.decided`` of that id about the same subject approved
                (``status`` ``approved``) and none revoked (``revoked``, ``test_304``),
                while its run has no ``action.intent`` of its
                digest (``input_hash``) after the request: its id, subject, the
                request's seq and run — approved, not run yet; other arguments under the
                key are refused as while it waits (``test_284``; SQLite format 12,
                PostgreSQL migration 14) unless it expired by then (read when the key is
                checked, ``test_306``)
==============  =====================================================================

One SQL text per dialect computes the rows from the events alone (:func:`from_events`):
an upgrade (SQLite format 7, PostgreSQL migration 8) derives them from the events already
written, and ``audit verify`` compares every row. The append keeps them by
:func:`statements`: an opening inserts its row (one index probe of ``events_subject`` for
a resolution already written), a resolution updates its task's rows (``human_tasks_task``),
a repair adds one to its run's count. Reading the open tasks (:func:`page`) is one range
of the partial index ``human_tasks_open`` (or ``human_tasks_run``): the cost of what is
listed, whatever else the journal holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Dialect = Literal["sqlite", "postgresql"]

OPENED = "human_task.opened"
#: the key of a ``human_task.opened`` payload naming the agent on whose behalf the task
#: waits (an escalation of its proposals): counted in its ``waiting_per_agent``
TASK_AGENT = "waits_for_agent"
RESOLVED = "human_task.resolved"

TASK_COLUMNS = "seq, task_id, run_id, resolved_seq"
REPAIR_COLUMNS = "run_id, repairs"
UNDECIDED_COLUMNS = "approval_id, subject, seq"
STEP_COLUMNS = "seq, run_id, step, input_hash"
BUDGET_COLUMNS = "subject, first_seq, last_seq"
EXCLUSION_COLUMNS = "approval_id, who"
STARTING_COLUMNS = "run_id, agent, seq"
UNRUN_COLUMNS = "approval_id, subject, seq, run_id"
STARTED = "workflow.started"
_ENDS = "('workflow.completed', 'workflow.failed')"

SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS human_tasks (seq INTEGER NOT NULL, task_id TEXT NOT NULL, "
    "run_id TEXT NOT NULL, resolved_seq INTEGER)",
    "CREATE UNIQUE INDEX IF NOT EXISTS human_tasks_seq ON human_tasks(seq)",
    "CREATE INDEX IF NOT EXISTS human_tasks_task ON human_tasks(task_id)",
    "CREATE INDEX IF NOT EXISTS human_tasks_open ON human_tasks(seq) "
    "WHERE resolved_seq IS NULL",
    "CREATE INDEX IF NOT EXISTS human_tasks_run ON human_tasks(run_id, seq)",
    "CREATE TABLE IF NOT EXISTS repairs (run_id TEXT NOT NULL, repairs INTEGER NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS repairs_run ON repairs(run_id)",
    "CREATE TABLE IF NOT EXISTS undecided_approvals (approval_id TEXT NOT NULL, "
    "subject TEXT NOT NULL, seq INTEGER NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS undecided_approvals_id ON undecided_approvals(approval_id)",
    "CREATE TABLE IF NOT EXISTS open_steps (seq INTEGER NOT NULL, run_id TEXT NOT NULL, "
    "step TEXT NOT NULL, input_hash TEXT NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS open_steps_seq ON open_steps(seq)",
    "CREATE INDEX IF NOT EXISTS open_steps_run ON open_steps(run_id, step, input_hash)",
    "CREATE TABLE IF NOT EXISTS budget_sets (subject TEXT NOT NULL, first_seq INTEGER NOT NULL, "
    "last_seq INTEGER NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS budget_sets_subject ON budget_sets(subject)",
    # approvals listed a page at a time, in the order they were asked for
    "CREATE INDEX IF NOT EXISTS approval_ids_seq ON approval_ids(seq)",
    "CREATE TABLE IF NOT EXISTS approval_exclusions (approval_id TEXT NOT NULL, "
    "who TEXT NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS approval_exclusions_key ON "
    "approval_exclusions(approval_id, who)",
    "CREATE TABLE IF NOT EXISTS starting_runs (run_id TEXT NOT NULL, agent TEXT NOT NULL, "
    "seq INTEGER NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS starting_runs_id ON starting_runs(run_id)",
    "CREATE INDEX IF NOT EXISTS starting_runs_agent ON starting_runs(agent)",
    "CREATE TABLE IF NOT EXISTS unrun_approvals (approval_id TEXT NOT NULL, "
    "subject TEXT NOT NULL, seq INTEGER NOT NULL, run_id TEXT NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS unrun_approvals_id ON unrun_approvals(approval_id)",
    "CREATE INDEX IF NOT EXISTS unrun_approvals_subject ON unrun_approvals(subject, run_id)",
)
POSTGRES_SCHEMA = (
    "CREATE TABLE human_tasks (seq bigint PRIMARY KEY, task_id text NOT NULL, "
    "run_id text NOT NULL, resolved_seq bigint)",
    "CREATE INDEX human_tasks_task ON human_tasks(task_id)",
    "CREATE INDEX human_tasks_open ON human_tasks(seq) WHERE resolved_seq IS NULL",
    "CREATE INDEX human_tasks_run ON human_tasks(run_id, seq)",
    "CREATE TABLE repairs (run_id text PRIMARY KEY, repairs bigint NOT NULL)",
    "CREATE TABLE undecided_approvals (approval_id text PRIMARY KEY, subject text NOT NULL, "
    "seq bigint NOT NULL)",
    "CREATE TABLE open_steps (seq bigint PRIMARY KEY, run_id text NOT NULL, step text NOT NULL, "
    "input_hash text NOT NULL)",
    "CREATE INDEX open_steps_run ON open_steps(run_id, step, input_hash)",
    "CREATE TABLE budget_sets (subject text PRIMARY KEY, first_seq bigint NOT NULL, "
    "last_seq bigint NOT NULL)",
    "CREATE INDEX approval_ids_seq ON approval_ids(seq)",
)
#: PostgreSQL migration 12's (the tables above are migration 8's: an earlier definition's
#: journal is completed by ``db migrate``, :mod:`.pg_admin`)
POSTGRES_EXCLUSIONS_SCHEMA = (
    "CREATE TABLE approval_exclusions (approval_id text NOT NULL, who text NOT NULL, "
    "PRIMARY KEY (approval_id, who))",
)
#: PostgreSQL migration 13's
POSTGRES_STARTING_SCHEMA = (
    "CREATE TABLE starting_runs (run_id text PRIMARY KEY, agent text NOT NULL, "
    "seq bigint NOT NULL)",
    "CREATE INDEX starting_runs_agent ON starting_runs(agent)",
)
#: PostgreSQL migration 14's
POSTGRES_UNRUN_SCHEMA = (
    "CREATE TABLE unrun_approvals (approval_id text PRIMARY KEY, subject text NOT NULL, "
    "seq bigint NOT NULL, run_id text NOT NULL)",
    "CREATE INDEX unrun_approvals_subject ON unrun_approvals(subject, run_id)",
)


@dataclass(frozen=True, slots=True)
class Decider:
    """The approver an inbox is read for: ``who``, and ``agents``, the agents of the home
    that act for them (the configuration's ``acts_for`` now). Their inbox leaves out, in
    its queries, what they may not decide (``tests/security/test_215``): an approval whose
    request excludes them (:data:`approval_exclusions`, fixed when it was asked for), a
    task or a step of a run whose agent is one of ``agents`` or ``who`` or that ``who``
    started — as deciding each checks it."""

    who: str
    agents: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class KeyAsked:
    """An agent's idempotency key for a tool (``agent``, ``tool``, ``key``: the request's
    proposal's ``agent_id``, ``action.action_type`` and ``action.idempotency_key``) and the
    digests of the action proposed under it now (``digests``): an approval no person
    decided yet under that key for another digest is another action waiting under the key
    (``tests/security/test_254``), and so is one approved and not run yet (``test_284``)."""

    agent: str
    tool: str
    key: str
    digests: tuple[str, ...]


def _under_key(dialect: Dialect, asked: KeyAsked) -> tuple[list[str], list[object]]:
    ph = "?" if dialect == "sqlite" else "%s"
    marks = ", ".join([ph] * len(asked.digests))
    return ([f"{_field(dialect, 'e', 'proposal', 'action', 'action_type')} = {ph}",
             f"{_field(dialect, 'e', 'proposal', 'action', 'idempotency_key')} = {ph}",
             f"{_field(dialect, 'e', 'approval', 'action_digest')} NOT IN ({marks})"],
            [asked.tool, asked.key, *asked.digests])


def _started(dialect: Dialect, run: str, key: str) -> str:
    """``key`` of the run's first event when it is a ``workflow.started`` (text only), or
    NULL: one probe of ``runs`` and one of the events' primary key."""
    return (f"(SELECT CASE WHEN {_is_text(dialect, 's', key)} THEN {_field(dialect, 's', key)} "
            f"END FROM runs r JOIN events s ON s.seq = r.first_seq WHERE r.run_id = {run} "
            "AND s.kind = 'workflow.started')")


def not_excluded(dialect: Dialect, kind: str, alias: str, decider: Decider
                 ) -> tuple[str, list[object]]:
    """The condition (and its parameters) that an item of ``kind`` (``approval``, ``task``
    or ``step``; its derived row's alias ``alias``) is no item ``decider`` is excluded
    from: for an approval one probe of ``approval_exclusions``; for a task its run's agent
    (its first proposal's or claim's, else its workflow's, as
    :func:`~cradle_kg.loop.approvals.excluded_for_run` reads it) and starter; for a step
    its workflow's agent and starter."""
    ph = "?" if dialect == "sqlite" else "%s"
    if kind == "approval":
        return (f"NOT EXISTS (SELECT 1 FROM approval_exclusions x WHERE x.approval_id = "
                f"{alias}.approval_id AND x.who = {ph})", [decider.who])
    owners: list[object] = [decider.who, *decider.agents]
    agent = _started(dialect, f"{alias}.run_id", "agent")
    marks = ", ".join([ph] * len(owners))
    mine = ""
    more: list[object] = []
    if kind == "task":
        agent = (f"(SELECT o.actor FROM events o WHERE o.run_id = {alias}.run_id AND o.kind IN "
                 f"('proposal.received', 'run.claimed') ORDER BY o.seq LIMIT 1), {agent}")
        # the task's own proposal (its opening's ``proposal_id``): its agent, the one it
        # acts for, on whose behalf (a run may hold several agents': test_599)
        mine = (f" AND NOT EXISTS (SELECT 1 FROM events t JOIN events p ON p.subject = "
                f"{_field(dialect, 't', 'proposal_id')} AND p.run_id = t.run_id AND "
                f"p.kind = 'proposal.received' WHERE t.seq = {alias}.seq AND "
                f"(p.actor IN ({marks}) OR "
                f"{_field(dialect, 'p', 'proposal', 'on_behalf_of')} = {ph}))")
        more = [*owners, decider.who]
    return (f"COALESCE({agent}, '') NOT IN ({marks}) AND "
            f"COALESCE({_started(dialect, f'{alias}.run_id', 'started_by')}, '') <> {ph}"
            + mine, [*owners, decider.who, *more])


def _field(dialect: Dialect, alias: str, *path: str) -> str:
    if dialect == "sqlite":
        return f"json_extract({alias}.payload, '$.{'.'.join(path)}')"
    from .run_state_sql import pg_payload

    inner = "".join(f" -> '{p}'" for p in path[:-1])
    return f"({pg_payload(f'{alias}.payload')}{inner} ->> '{path[-1]}')"


def _is_text(dialect: Dialect, alias: str, key: str) -> str:
    if dialect == "sqlite":
        return f"json_type({alias}.payload, '$.{key}') = 'text'"
    from .run_state_sql import pg_payload

    return f"json_typeof({pg_payload(f'{alias}.payload')} -> '{key}') = 'string'"


def _resolution(dialect: Dialect, task: str) -> str:
    """The seq of the newest resolution of the task ``task`` (an SQL expression). Every
    key compared is text on both sides, as the append's checks (``isinstance(.., str)``)
    have it: PostgreSQL's ``->>`` reads a number as its text, SQLite's ``json_extract``
    does not, and an event written by hand must not make the two disagree."""
    return (f"(SELECT MAX(r.seq) FROM events r WHERE r.subject = {task} AND r.kind = "
            f"'{RESOLVED}' AND {_is_text(dialect, 'r', 'task_id')} AND "
            f"{_field(dialect, 'r', 'task_id')} = {task})")


def from_events(dialect: Dialect, table: str) -> str:
    """The rows of ``table`` (``human_tasks`` or ``repairs``) computed from the events, in
    key order."""
    if table == "human_tasks":
        task = _field(dialect, "o", "task_id")
        return (f"SELECT o.seq, {task}, o.run_id, {_resolution(dialect, task)} FROM events o "
                f"WHERE o.kind = '{OPENED}' AND {_is_text(dialect, 'o', 'task_id')} "
                "ORDER BY o.seq")
    if table == "budget_sets":
        order = "subject" if dialect == "sqlite" else 'subject COLLATE "C"'
        return ("SELECT subject, MIN(seq), MAX(seq) FROM events WHERE kind = 'budget.set' "
                f"GROUP BY subject ORDER BY {order}")
    if table == "open_steps":
        step, ih = _field(dialect, "e", "step"), _field(dialect, "e", "input_hash")
        return (f"SELECT e.seq, e.run_id, {step}, {ih} FROM events e WHERE e.kind = "
                f"'human.requested' AND {_is_text(dialect, 'e', 'step')} AND "
                f"{_is_text(dialect, 'e', 'input_hash')} AND NOT EXISTS "
                f"({_step_decided(dialect, 'e.run_id', step, ih)}) AND NOT EXISTS "
                f"({_run_ended(dialect, 'e.run_id')}) ORDER BY e.seq")
    if table == "approval_exclusions":
        return _exclusions(dialect)
    if table == "starting_runs":
        return _starting(dialect)
    if table == "unrun_approvals":
        return _unrun(dialect)
    if table == "undecided_approvals":
        order = "a.approval_id" if dialect == "sqlite" else 'a.approval_id COLLATE "C"'
        return (f"SELECT a.approval_id, a.subject, a.seq FROM ({_first_requests(dialect)}) a "
                f"WHERE NOT EXISTS (SELECT 1 FROM events d WHERE d.subject = a.subject AND "
                f"d.kind = 'approval.decided' AND d.seq > a.seq AND "
                f"{_is_text(dialect, 'd', 'approval_id')} AND "
                f"{_field(dialect, 'd', 'approval_id')} = a.approval_id) ORDER BY {order}")
    order = "e.run_id" if dialect == "sqlite" else 'e.run_id COLLATE "C"'
    count = "COUNT(*)" if dialect == "sqlite" else "COUNT(*)::bigint"
    return (f"SELECT e.run_id, {count} FROM events e WHERE e.kind = 'run.outcome' AND "
            f"{_field(dialect, 'e', 'outcome', 'status')} = 'repair' GROUP BY e.run_id "
            f"ORDER BY {order}")


def _unrun(dialect: Dialect) -> str:
    """Each keyed first request a person approved whose run has no intent of its digest
    after it (the table's definition, above), in key order."""
    order = "a.approval_id" if dialect == "sqlite" else 'a.approval_id COLLATE "C"'
    return (f"SELECT a.approval_id, a.subject, a.seq, q.run_id FROM ({_first_requests(dialect)}"
            f") a JOIN events q ON q.seq = a.seq WHERE {_keyed(dialect, 'q')} AND "
            f"EXISTS ({_approved(dialect, 'a.approval_id', 'a.subject', 'a.seq')}) AND "
            f"NOT EXISTS ({_approved(dialect, 'a.approval_id', 'a.subject', 'a.seq', 'revoked')}"
            f") AND NOT EXISTS ({_ran(dialect, 'q.run_id', 'a.subject', 'a.seq')}) "
            f"ORDER BY {order}")


def _keyed(dialect: Dialect, alias: str) -> str:
    """The request ``alias`` was asked under its agent's idempotency key (a text)."""
    if dialect == "sqlite":
        return f"json_type({alias}.payload, '$.proposal.action.idempotency_key') = 'text'"
    from .run_state_sql import pg_payload

    return (f"json_typeof({pg_payload(f'{alias}.payload')} -> 'proposal' -> 'action' -> "
            "'idempotency_key') = 'string'")


def _approved(dialect: Dialect, approval_id: str, subject: str, seq: str,
              status: str = "approved") -> str:
    """An ``approval.decided`` approving ``approval_id`` about ``subject`` after ``seq``
    (through ``events_subject``); ``status``: of that status instead (``revoked``)."""
    return (f"SELECT 1 FROM events d WHERE d.subject = {subject} AND d.kind = "
            f"'approval.decided' AND d.seq > {seq} AND {_is_text(dialect, 'd', 'approval_id')} "
            f"AND {_field(dialect, 'd', 'approval_id')} = {approval_id} AND "
            f"{_is_text(dialect, 'd', 'status')} AND {_field(dialect, 'd', 'status')} = "
            f"'{status}'")


def _ran(dialect: Dialect, run: str, subject: str, seq: str) -> str:
    """An ``action.intent`` in ``run`` after ``seq`` whose ``input_hash`` is the digest of
    the approval ``subject`` (``approval:<digest>``), through ``events_run``."""
    return (f"SELECT 1 FROM events i WHERE i.run_id = {run} AND i.kind = 'action.intent' AND "
            f"i.seq > {seq} AND {_is_text(dialect, 'i', 'input_hash')} AND "
            f"'approval:' || {_field(dialect, 'i', 'input_hash')} = {subject}")


def approval_moved(dialect: Dialect, *, revoking: bool, ph: str | None = None) -> str:
    """The probe of an :class:`~.journal.ApprovalGuard` (its parameters:
    :func:`approval_moved_args`): for a use, whether a revoke of the approval (an
    ``approval.decided`` of status ``revoked`` about its subject after its request: one
    range of ``events_subject``); for a revoke, whether an intent in its run names it
    after the approving decision (one range of ``events_run`` from that seq on).
    ``ph``: what stands for each parameter (the dialect's placeholder by default; a use's
    probe inside PostgreSQL's ``cradle_append`` names the approval's id, migration 16)."""
    if ph is None:
        ph = "?" if dialect == "sqlite" else "%s"
    if revoking:
        return (f"SELECT EXISTS (SELECT 1 FROM events i WHERE i.run_id = {ph} AND i.seq > {ph} "
                f"AND i.kind = 'action.intent' AND {_is_text(dialect, 'i', 'approval_id')} "
                f"AND {_field(dialect, 'i', 'approval_id')} = {ph})")
    return (f"SELECT EXISTS (SELECT 1 FROM approval_ids a JOIN events d ON d.subject = "
            f"a.subject AND d.seq > a.seq WHERE a.approval_id = {ph} AND d.kind = "
            f"'approval.decided' AND {_is_text(dialect, 'd', 'approval_id')} AND "
            f"{_field(dialect, 'd', 'approval_id')} = {ph} AND "
            f"{_field(dialect, 'd', 'status')} = 'revoked')")


def approval_uses(dialect: Dialect) -> str:
    """How many intents in a run name an approval between two seqs (its approving
    decision's and its revoke's): the uses a reusable approval had before a person revoked
    it (``tests/security/test_316``) — one range of ``events_run``. Its parameters: the
    run, the two seqs, the approval id."""
    ph = "?" if dialect == "sqlite" else "%s"
    return (f"SELECT COUNT(*) FROM events i WHERE i.run_id = {ph} AND i.seq > {ph} AND "
            f"i.seq < {ph} AND i.kind = 'action.intent' AND "
            f"{_is_text(dialect, 'i', 'approval_id')} AND "
            f"{_field(dialect, 'i', 'approval_id')} = {ph}")


def approval_moved_args(approval_id: str, run_id: str, *, revoking: bool, after: int
                        ) -> tuple[object, ...]:
    """The parameters of :func:`approval_moved` for a guard (its fields)."""
    if revoking:
        return (run_id, after, approval_id)
    return (approval_id, approval_id)


def _exclusions(dialect: Dialect) -> str:
    """Each (approval id, identity) an ``approval.requested`` names in its ``excluded``
    list (its text items), once, in key order."""
    if dialect == "sqlite":
        return ("SELECT DISTINCT json_extract(q.payload, '$.approval.id'), j.value FROM events q, "
                "json_each(q.payload, '$.excluded') j WHERE q.kind = 'approval.requested' AND "
                "json_type(q.payload, '$.approval.id') = 'text' AND "
                "json_type(q.payload, '$.excluded') = 'array' AND j.type = 'text' "
                "ORDER BY 1, 2")
    from .run_state_sql import pg_payload

    p = pg_payload("q.payload")
    c = 'COLLATE "C"'
    return (f"SELECT DISTINCT x.a {c}, x.w {c} FROM (SELECT ({p} -> 'approval' ->> 'id') "
            "AS a, j.v #>> '{}' AS w FROM events q CROSS JOIN LATERAL json_array_elements("
            f"CASE WHEN json_typeof({p} -> 'excluded') = 'array' THEN {p} -> 'excluded' ELSE "
            "'[]'::json END) AS j(v) WHERE q.kind = 'approval.requested' AND "
            f"json_typeof({p} -> 'approval' -> 'id') = 'string' AND json_typeof(j.v) = 'string'"
            ") x ORDER BY 1, 2")


def has_human_step(steps: object) -> bool:
    """Whether a ``workflow.started``'s recorded ``steps`` hold a human one (an item
    ``[id, "human", ...]``), as :func:`_recorded_human` reads it in SQL."""
    return isinstance(steps, list) and any(
        isinstance(s, list) and len(s) > 1 and s[1] == "human" for s in steps)


def _recorded_human(dialect: Dialect, alias: str) -> str:
    """The start ``alias`` records a human step (:func:`has_human_step`)."""
    if dialect == "sqlite":
        return (f"EXISTS (SELECT 1 FROM json_each({alias}.payload, '$.steps') j WHERE "
                f"json_type({alias}.payload, '$.steps') = 'array' AND j.type = 'array' AND "
                "json_extract(j.value, '$[1]') = 'human')")
    from .run_state_sql import pg_payload

    p = pg_payload(f"{alias}.payload")
    return (f"EXISTS (SELECT 1 FROM json_array_elements(CASE WHEN json_typeof({p} -> 'steps') "
            f"= 'array' THEN {p} -> 'steps' ELSE '[]'::json END) AS j(v) WHERE "
            "json_typeof(j.v) = 'array' AND json_typeof(j.v -> 1) = 'string' AND "
            "(j.v ->> 1) = 'human')")


def _not_at_human(dialect: Dialect, run: str) -> str:
    """No ``human.requested`` and no end in the run ``run`` (through ``events_run``)."""
    return (f"NOT EXISTS (SELECT 1 FROM events h WHERE h.run_id = {run} AND h.kind = "
            f"'human.requested') AND NOT EXISTS ({_run_ended(dialect, run)})")


def _starting(dialect: Dialect) -> str:
    """Each run's first start of a workflow with a human step, naming its agent, while
    the run has no ``human.requested`` and no end: run id, agent, seq, in key order."""
    cond = (f"s.kind = '{STARTED}' AND {_is_text(dialect, 's', 'agent')} AND "
            f"{_recorded_human(dialect, 's')} AND {_not_at_human(dialect, 's.run_id')}")
    agent = _field(dialect, "s", "agent")
    if dialect == "sqlite":  # the bare column is read from the row of MIN(seq)
        return (f"SELECT s.run_id, {agent}, MIN(s.seq) FROM events s WHERE {cond} "
                "GROUP BY s.run_id ORDER BY s.run_id")
    return (f"SELECT x.run_id, x.agent, x.seq FROM (SELECT DISTINCT ON (s.run_id) s.run_id, "
            f"{agent} AS agent, s.seq FROM events s WHERE {cond} ORDER BY s.run_id, s.seq) "
            'x ORDER BY x.run_id COLLATE "C"')


def _step_decided(dialect: Dialect, run: str, step: str, input_hash: str) -> str:
    """A ``human.decided`` of that run, step and input hash (through ``events_run``)."""
    return (f"SELECT 1 FROM events d WHERE d.run_id = {run} AND d.kind = 'human.decided' "
            f"AND {_is_text(dialect, 'd', 'step')} AND {_is_text(dialect, 'd', 'input_hash')} "
            f"AND {_field(dialect, 'd', 'step')} = {step} AND "
            f"{_field(dialect, 'd', 'input_hash')} = {input_hash}")


def _run_ended(dialect: Dialect, run: str) -> str:
    return f"SELECT 1 FROM events w WHERE w.run_id = {run} AND w.kind IN {_ENDS}"


def _first_requests(dialect: Dialect) -> str:
    """Each approval id's first request: its id, subject and seq (as ``approval_ids``)."""
    approval = _field(dialect, "q", "approval", "id")
    if dialect == "sqlite":
        return (f"SELECT {approval} AS approval_id, q.subject, MIN(q.seq) AS seq FROM events q "
                "WHERE q.kind = 'approval.requested' AND json_type(q.payload, "
                "'$.approval.id') = 'text' GROUP BY 1")
    from .run_state_sql import pg_payload

    return (f"SELECT DISTINCT ON (1) {approval} AS approval_id, q.subject, q.seq FROM "
            f"events q WHERE q.kind = 'approval.requested' AND json_typeof("
            f"{pg_payload('q.payload')} -> 'approval' -> 'id') = 'string' ORDER BY 1, q.seq")


def stored(dialect: Dialect, table: str) -> str:
    if table == "unrun_approvals":
        order = "approval_id" if dialect == "sqlite" else 'approval_id COLLATE "C"'
        return f"SELECT {UNRUN_COLUMNS} FROM unrun_approvals ORDER BY {order}"
    if table == "starting_runs":
        order = "run_id" if dialect == "sqlite" else 'run_id COLLATE "C"'
        return f"SELECT {STARTING_COLUMNS} FROM starting_runs ORDER BY {order}"
    if table == "approval_exclusions":
        order = "approval_id, who" if dialect == "sqlite" else \
            'approval_id COLLATE "C", who COLLATE "C"'
        return f"SELECT {EXCLUSION_COLUMNS} FROM approval_exclusions ORDER BY {order}"
    if table == "human_tasks":
        return f"SELECT {TASK_COLUMNS} FROM human_tasks ORDER BY seq"
    if table == "undecided_approvals":
        order = "approval_id" if dialect == "sqlite" else 'approval_id COLLATE "C"'
        return f"SELECT {UNDECIDED_COLUMNS} FROM undecided_approvals ORDER BY {order}"
    if table == "open_steps":
        return f"SELECT {STEP_COLUMNS} FROM open_steps ORDER BY seq"
    if table == "budget_sets":
        order = "subject" if dialect == "sqlite" else 'subject COLLATE "C"'
        return f"SELECT {BUDGET_COLUMNS} FROM budget_sets ORDER BY {order}"
    order = "run_id" if dialect == "sqlite" else 'run_id COLLATE "C"'
    return f"SELECT {REPAIR_COLUMNS} FROM repairs ORDER BY {order}"


#: the tables of SQLite format 7 and PostgreSQL migration 8
TABLES_8 = ("human_tasks", "repairs", "undecided_approvals", "open_steps", "budget_sets")
#: SQLite format 10's and PostgreSQL migration 12's
EXCLUSION_TABLES = ("approval_exclusions",)
#: SQLite format 11's and PostgreSQL migration 13's
STARTING_TABLES = ("starting_runs",)
#: SQLite format 12's and PostgreSQL migration 14's
UNRUN_TABLES = ("unrun_approvals",)
TABLES = (*TABLES_8, *EXCLUSION_TABLES, *STARTING_TABLES, *UNRUN_TABLES)
#: each table's columns, its key first
COLUMNS = {"human_tasks": TASK_COLUMNS, "repairs": REPAIR_COLUMNS,
           "undecided_approvals": UNDECIDED_COLUMNS, "open_steps": STEP_COLUMNS,
           "budget_sets": BUDGET_COLUMNS, "approval_exclusions": EXCLUSION_COLUMNS,
           "starting_runs": STARTING_COLUMNS, "unrun_approvals": UNRUN_COLUMNS}
#: each table's key order, where it is more than its first column
ORDER = {"approval_exclusions": "approval_id, who"}
#: the event kinds that change these tables
KINDS = frozenset({OPENED, RESOLVED, "run.outcome", "approval.requested", "approval.decided",
                   "human.requested", "human.decided", "workflow.completed", "workflow.failed",
                   "budget.set", STARTED})


def statements(dialect: Dialect, *, seq: int, run_id: str, kind: str, subject: str,
               payload: dict[str, Any]) -> list[tuple[str, tuple[Any, ...]]]:
    """What one event changes in these tables: (SQL, parameters) each, none for most."""
    ph = "?" if dialect == "sqlite" else "%s"
    if kind == "run.outcome":
        outcome = payload.get("outcome")
        if isinstance(outcome, dict) and outcome.get("status") == "repair":
            return [(f"INSERT INTO repairs(run_id, repairs) VALUES ({ph}, 1) ON CONFLICT "
                     "(run_id) DO UPDATE SET repairs = repairs.repairs + 1", (run_id,))]
        return []
    if kind == "approval.requested":  # before its ``approval_ids`` row: the first request
        approval = payload.get("approval")
        approval_id = approval.get("id") if isinstance(approval, dict) else None
        if not isinstance(approval_id, str):
            return []
        excluded = payload.get("excluded")
        who = sorted({x for x in excluded if isinstance(x, str)}) \
            if isinstance(excluded, list) else []
        return [(f"INSERT INTO undecided_approvals({UNDECIDED_COLUMNS}) SELECT {ph}, {ph}, {ph} "
                 f"WHERE NOT EXISTS (SELECT 1 FROM approval_ids WHERE approval_id = {ph})",
                 (approval_id, subject, seq, approval_id)),
                *((f"INSERT INTO approval_exclusions({EXCLUSION_COLUMNS}) VALUES ({ph}, {ph}) "
                   "ON CONFLICT DO NOTHING", (approval_id, x)) for x in who)]
    if kind == "budget.set":
        return [(f"INSERT INTO budget_sets({BUDGET_COLUMNS}) VALUES ({ph}, {ph}, {ph}) ON "
                 "CONFLICT (subject) DO UPDATE SET last_seq = excluded.last_seq",
                 (subject, seq, seq))]
    if kind == STARTED:
        agent = payload.get("agent")
        if not isinstance(agent, str) or not has_human_step(payload.get("steps")):
            return []
        return [(f"INSERT INTO starting_runs({STARTING_COLUMNS}) SELECT {ph}, {ph}, {ph} "
                 f"WHERE {_not_at_human(dialect, ph)} ON CONFLICT (run_id) DO NOTHING",
                 (run_id, agent, seq, run_id, run_id))]
    # a run's first human step, or its end: no longer on its way to a person
    started: list[tuple[str, tuple[Any, ...]]] = [
        (f"DELETE FROM starting_runs WHERE run_id = {ph}", (run_id,))] \
        if kind in ("human.requested", "workflow.completed", "workflow.failed") else []
    if kind in ("workflow.completed", "workflow.failed"):
        return [(f"DELETE FROM open_steps WHERE run_id = {ph}", (run_id,)), *started]
    if kind in ("human.requested", "human.decided"):
        step, input_hash = payload.get("step"), payload.get("input_hash")
        if not isinstance(step, str) or not isinstance(input_hash, str):
            return started
        if kind == "human.decided":
            return [(f"DELETE FROM open_steps WHERE run_id = {ph} AND step = {ph} AND "
                     f"input_hash = {ph}", (run_id, step, input_hash))]
        return [(f"INSERT INTO open_steps({STEP_COLUMNS}) SELECT {ph}, {ph}, {ph}, {ph} WHERE "
                 f"NOT EXISTS ({_step_decided(dialect, ph, ph, ph)}) AND NOT EXISTS "
                 f"({_run_ended(dialect, ph)})",
                 (seq, run_id, step, input_hash, run_id, step, input_hash, run_id)), *started]
    if kind == "approval.decided":
        approval_id = payload.get("approval_id")
        if not isinstance(approval_id, str):
            return []
        undecided = (f"DELETE FROM undecided_approvals WHERE approval_id = {ph} AND "
                     f"subject = {ph}", (approval_id, subject))
        if payload.get("status") == "revoked":  # taken back: it holds its key no more
            return [undecided, (f"DELETE FROM unrun_approvals WHERE approval_id = {ph} AND "
                                f"subject = {ph}", (approval_id, subject))]
        if payload.get("status") != "approved":
            return [undecided]
        # its first request, when keyed and about this subject, and its run has no intent
        # of the digest since: approved, not run yet
        return [undecided, (
            f"INSERT INTO unrun_approvals({UNRUN_COLUMNS}) SELECT a.approval_id, a.subject, "
            f"a.seq, q.run_id FROM approval_ids a JOIN events q ON q.seq = a.seq WHERE "
            f"a.approval_id = {ph} AND a.subject = {ph} AND a.seq < {ph} AND "
            f"{_keyed(dialect, 'q')} AND NOT EXISTS "
            f"({_ran(dialect, 'q.run_id', 'a.subject', 'a.seq')}) "
            "ON CONFLICT (approval_id) DO NOTHING", (approval_id, subject, seq))]
    task = payload.get("task_id")
    if not isinstance(task, str):
        return []
    if kind == OPENED:
        return [(f"INSERT INTO human_tasks({TASK_COLUMNS}) VALUES ({ph}, {ph}, {ph}, "
                 f"{_resolution(dialect, ph)})", (seq, task, run_id, task, task))]
    if kind == RESOLVED and subject == task:
        return [(f"UPDATE human_tasks SET resolved_seq = {ph} WHERE task_id = {ph}",
                 (seq, task))]
    return []


def ran(dialect: Dialect, *, run_id: str, payload: dict[str, Any]
        ) -> list[tuple[str, tuple[Any, ...]]]:
    """What an ``action.intent`` changes here: the approvals of its digest in its run are
    no longer approved and not run (``unrun_approvals``; one probe of its index)."""
    digest = payload.get("input_hash")
    if not isinstance(digest, str):
        return []
    ph = "?" if dialect == "sqlite" else "%s"
    return [(f"DELETE FROM unrun_approvals WHERE subject = {ph} AND run_id = {ph}",
             ("approval:" + digest, run_id))]


def page(dialect: Dialect, columns: str, *, run_id: str | None, include_resolved: bool,
         decider: Decider | None = None) -> tuple[str, str, list[object]]:
    """The query of one page of tasks, oldest first — each opening's event ``columns`` (a
    comma-separated list of the events table's) then its resolution's (NULLs while open),
    then ``LIMIT`` / ``OFFSET`` — the query of how many there are, and their parameters."""
    ph = "?" if dialect == "sqlite" else "%s"
    conds, args = [], list[object]()
    if not include_resolved:
        conds.append("h.resolved_seq IS NULL")
    if run_id is not None:
        conds.append(f"h.run_id = {ph}")
        args.append(run_id)
    if decider is not None:
        cond, more = not_excluded(dialect, "task", "h", decider)
        conds.append(cond)
        args.extend(more)
    where = (" WHERE " + " AND ".join(conds)) if conds else ""
    names = [c.strip() for c in columns.split(",")]
    cols = ", ".join([f"o.{c}" for c in names] + [f"r.{c}" for c in names])
    return (f"SELECT {cols} FROM human_tasks h JOIN events o ON o.seq = h.seq LEFT JOIN "
            f"events r ON r.seq = h.resolved_seq{where} ORDER BY h.seq LIMIT {ph} OFFSET {ph}",
            f"SELECT COUNT(*) FROM human_tasks h{where}", args)


def approvals_page(dialect: Dialect, columns: str, *, undecided: bool, run_id: str | None,
                   requested_by: str | None, decider: Decider | None = None,
                   keyed: KeyAsked | None = None, unrun: bool = False
                   ) -> tuple[str, str, list[object]]:
    """The query of one page of approvals in the order they were asked for — every one
    (``approval_ids``) or the undecided ones (``undecided_approvals``) — each its first
    request's event ``columns`` (comma-separated, of the events table), then ``LIMIT`` /
    ``OFFSET``; the query of how many there are; their parameters. ``run_id``: those that
    run asked for; ``requested_by``: those that agent's proposals asked for (its request's
    ``approval.requested_by``). Filtered in the query, before the page: an agent's page
    of its approvals is a page of its own, and a run view's or an agent's read of them
    decodes theirs alone, whatever another agent asked (``tests/security/test_100``)."""
    ph = "?" if dialect == "sqlite" else "%s"
    table = "unrun_approvals" if unrun else \
        "undecided_approvals" if undecided else "approval_ids"
    conds, args = [], list[object]()
    if run_id is not None:
        conds.append(f"e.run_id = {ph}")
        args.append(run_id)
    if requested_by is not None:
        conds.append(f"{_field(dialect, 'e', 'approval', 'requested_by')} = {ph}")
        args.append(requested_by)
    if decider is not None:
        cond, more = not_excluded(dialect, "approval", "a", decider)
        conds.append(cond)
        args.extend(more)
    if keyed is not None:  # its agent's (requested_by), under its key, of another action
        more_conds, more = _under_key(dialect, keyed)
        conds.extend(more_conds)
        args.extend(more)
    where = (" WHERE " + " AND ".join(conds)) if conds else ""
    cols = ", ".join(f"e.{c.strip()}" for c in columns.split(","))
    join = f"FROM {table} a JOIN events e ON e.seq = a.seq{where}"
    return (f"SELECT {cols} {join} ORDER BY a.seq LIMIT {ph} OFFSET {ph}",
            f"SELECT COUNT(*) {join}", args)


def inbox_order(dialect: Dialect, kinds: Sequence[str], *, run_id: str | None,
                decider: Decider | None = None) -> tuple[str, list[object]]:
    """The query of one page of an inbox of several ``kinds`` (``approval``, ``task``,
    ``step``), merged in the order they were asked for: each row the item's kind and its
    rank among the items of its kind (0: the oldest), then ``LIMIT`` / ``OFFSET``; and its
    parameters. Read from the derived tables alone (an approval's run from its request's
    ``run_id`` column, nothing decoded): the page's items are then read by kind, each
    kind's run of them one page of its own query — the items an ``offset`` skips are never
    built (``tests/security/test_129``). ``decider``: without what they may not decide
    (:func:`not_excluded`), as each kind's own query leaves it out."""
    ph = "?" if dialect == "sqlite" else "%s"
    parts, args = [], list[object]()
    sources = (("approval", "a", "SELECT 'approval' AS kind, a.seq AS seq FROM "
                "undecided_approvals a JOIN events e ON e.seq = a.seq", "e.run_id"),
               ("task", "h", "SELECT 'task' AS kind, h.seq AS seq FROM human_tasks h",
                "h.run_id"),
               ("step", "w", "SELECT 'step' AS kind, w.seq AS seq FROM open_steps w",
                "w.run_id"))
    for kind, alias, select, run in sources:
        if kind not in kinds:
            continue
        conds = ["h.resolved_seq IS NULL"] if kind == "task" else []
        if run_id is not None:
            conds.append(f"{run} = {ph}")
            args.append(run_id)
        if decider is not None:
            cond, more = not_excluded(dialect, kind, alias, decider)
            conds.append(cond)
            args.extend(more)
        parts.append(select + (" WHERE " + " AND ".join(conds) if conds else ""))
    merged = " UNION ALL ".join(parts)
    return (f"SELECT kind, ROW_NUMBER() OVER (PARTITION BY kind ORDER BY seq) - 1 AS rank, "
            f"seq FROM ({merged}) u ORDER BY seq LIMIT {ph} OFFSET {ph}", args)


REPAIRS_SQL = "SELECT repairs FROM repairs WHERE run_id = {}"
#: the newest ``budget.set`` of each subject, in the order the subjects were first set
BUDGET_SETS_SQL = ("SELECT {} FROM budget_sets b JOIN events e ON e.seq = b.last_seq "
                   "ORDER BY b.first_seq")
def steps_page(dialect: Dialect, columns: str, *, run_id: str | None,
               agent: str | None = None, decider: Decider | None = None
               ) -> tuple[str, str, list[object]]:
    """The query of one page of the open human steps' requests (``open_steps``), oldest
    first — their event ``columns``, then ``LIMIT`` / ``OFFSET`` — the query of how many
    there are, and their parameters (``run_id``: that run's; ``agent``: those of the
    runs whose workflow's agent it is, read from each run's ``workflow.started`` — its
    first event, two probes per open step: a join on every ``workflow.started`` read
    each one ever written, at every count under the writer's lock)."""
    ph = "?" if dialect == "sqlite" else "%s"
    conds, args = [], list[object]()
    if run_id is not None:
        conds.append(f"w.run_id = {ph}")
        args.append(run_id)
    if agent is not None:
        conds.append(f"{_started(dialect, 'w.run_id', 'agent')} = {ph}")
        args.append(agent)
    if decider is not None:
        cond, more = not_excluded(dialect, "step", "w", decider)
        conds.append(cond)
        args.extend(more)
    where = (" WHERE " + " AND ".join(conds)) if conds else ""
    cols = ", ".join(f"e.{c.strip()}" for c in columns.split(","))
    return (f"SELECT {cols} FROM open_steps w JOIN events e ON e.seq = w.seq{where} "
            f"ORDER BY w.seq LIMIT {ph} OFFSET {ph}",
            f"SELECT COUNT(*) FROM open_steps w{where}", args)


def waiting_sql(dialect: Dialect, agent: str, *, run: str | None = None
                ) -> list[tuple[str, list[object]]]:
    """The four counts of what waits for a person on ``agent``'s behalf — its undecided
    approvals, the open human steps of its workflow's runs, the open tasks its
    escalations opened (:data:`TASK_AGENT`) and its workflow's runs on their way to their
    first human step (``starting_runs``) — as (query, parameters): what
    ``input_limits.waiting_per_agent`` bounds, read again by the journal under its
    writer's lock (:class:`~.journal.WaitingCap`). ``run``: the run the one more asked for
    waits in, left out of the last count (what waits in it takes its place)."""
    approvals = approvals_page(dialect, "seq", undecided=True, run_id=None,
                               requested_by=agent)
    steps = steps_page(dialect, "seq", run_id=None, agent=agent)
    ph = "?" if dialect == "sqlite" else "%s"
    # the open tasks that wait on its behalf (``tests/security/test_209``): through the
    # partial index of the open ones
    tasks = (f"SELECT COUNT(*) FROM human_tasks t JOIN events e ON e.seq = t.seq WHERE "
             f"t.resolved_seq IS NULL AND {_field(dialect, 'e', TASK_AGENT)} = {ph}")
    # its runs started and not yet at a human step (``tests/security/test_249``), one range
    # of ``starting_runs_agent``; a run that waits on an undecided approval its agent's
    # proposal asked for (a tool step's) is counted once, by that approval — the runs of
    # those approvals read once, as the first count reads them (never a run's events: the
    # agent writes into its run at will)
    starting = (f"SELECT COUNT(*) FROM starting_runs r WHERE r.agent = {ph} AND r.run_id NOT IN "
                "(SELECT q.run_id FROM undecided_approvals u JOIN events q ON q.seq = u.seq "
                f"WHERE {_field(dialect, 'q', 'approval', 'requested_by')} = {ph})")
    if run is not None:
        starting += f" AND r.run_id <> {ph}"
    return [(approvals[1], approvals[2]), (steps[1], steps[2]), (tasks, [agent]),
            (starting, [agent, agent, *([run] if run is not None else [])])]


__all__ = [
    "BUDGET_COLUMNS",
    "BUDGET_SETS_SQL",
    "COLUMNS",
    "EXCLUSION_COLUMNS",
    "EXCLUSION_TABLES",
    "KINDS",
    "OPENED",
    "ORDER",
    "POSTGRES_EXCLUSIONS_SCHEMA",
    "POSTGRES_SCHEMA",
    "POSTGRES_STARTING_SCHEMA",
    "REPAIRS_SQL",
    "REPAIR_COLUMNS",
    "RESOLVED",
    "SQLITE_SCHEMA",
    "STARTED",
    "STARTING_COLUMNS",
    "STARTING_TABLES",
    "STEP_COLUMNS",
    "TABLES",
    "TABLES_8",
    "TASK_AGENT",
    "TASK_COLUMNS",
    "UNDECIDED_COLUMNS",
    "Decider",
    "KeyAsked",
    "approvals_page",
    "from_events",
    "has_human_step",
    "inbox_order",
    "not_excluded",
    "page",
    "statements",
    "steps_page",
    "stored",
    "waiting_sql",
]
