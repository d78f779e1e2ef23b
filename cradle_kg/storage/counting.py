"""What the derived state counts, the same on every journal.

Which usage buckets an event counts in and with what cost (rate and cost limits, budgets),
how a window is read from two running totals, which proposals a run has received, the
latest event of a subject (an ``if_last`` guard), whether a run has an event yet (an
``if_new_run`` guard) and the newest events of a kind by one actor (a quota's count).
:mod:`.sqlite_derived` and :mod:`.pg_schema` write the tables from these rules;
:mod:`.journal` checks the caps and guards of an append with them under the writer's lock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from ..isotime import parse_iso
from .run_state_sql import pg_payload

#: scopes a usage bucket counts for, besides ``*`` (every intent)
USAGE_FIELDS = ("agent", "task_id", "tenant")
#: the usage scope of each budget level: a model call is charged to its tenant and its
#: workflow (when its payload names them) and to its run
BUDGET_SCOPES = {"tenant": "budget.tenant", "workflow": "budget.workflow",
                 "invocation": "budget.invocation"}

#: the usage scope of an agent's refused proposals (``input_limits.refusals_per_agent_per_hour``):
#: a ``decision.made`` whose payload names the agent under :data:`REFUSED_AGENT` counts in
#: the agent's bucket (a decision written before said it counts in none)
REFUSALS_SCOPE = "refusals.agent"
#: the scopes :meth:`~.journal.Journal.usage_since` reads a window of: the call fields,
#: and an agent's refusals (the runtime's early count, before it claims a new run for a
#: refused proposal: ``tests/security/test_216``)
WINDOWED_SCOPES = (*USAGE_FIELDS, REFUSALS_SCOPE)
#: the usage scopes of the records that an identity reached a quota (``quota.reached``:
#: ``quota.<its key>``, the identity; :mod:`cradle_kg.throttling`), also read by window
QUOTA_SCOPE_PREFIX = "quota."
QUOTA_REACHED = "quota.reached"
#: on a journal with a server (PostgreSQL), the prefix of the usage scopes that count each
#: intent a second time, in the second of the server's clock when it was appended (the
#: scopes of :func:`usage_keys`: ``server:*``, ``server:agent`` …): a limit's window is
#: read there, so workers' clocks apart do not decide which minute a call belongs to
#: (``tests/security/test_549``). The events keep the runtime's ``at``
SERVER_SCOPE_PREFIX = "server:"


def windowed(scope: str) -> bool:
    """Whether :meth:`~.journal.Journal.usage_since` reads a window of ``scope``."""
    return scope in WINDOWED_SCOPES or scope.startswith(QUOTA_SCOPE_PREFIX)
#: the key of a ``decision.made`` payload naming the agent whose proposal gate 1 denied or
#: sent back (``deny``, ``clarify``, ``repair``)
REFUSED_AGENT = "refused_agent"

def window_usage(row: tuple[Any, ...]) -> tuple[int, float]:
    """(calls, cost) in a window from :data:`.sqlite_derived.USAGE_WINDOW_SQL`'s row (and
    its PostgreSQL twin): the difference of two running totals. The cost is rounded to
    1e-9, so that the difference of two large sums does not leave rounding residue a limit
    would read as spending."""
    calls = int(row[0]) - int(row[2])
    return calls, (round(float(row[1]) - float(row[3]), 9) if calls else 0.0)


def intent_cost(payload: dict[str, Any]) -> float:
    """The cost an intent or a model call declares (0 when it declares none, or not a
    number)."""
    cost = payload.get("cost")
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return 0.0
    return float(cost)


def usage_keys(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``(scope, subject)`` buckets an intent counts in: overall, and per each of
    :data:`USAGE_FIELDS` it names (both journals)."""
    return [("*", "")] + [(f, payload[f]) for f in USAGE_FIELDS
                          if isinstance(payload.get(f), str)]


def charges_budget(kind: str, payload: dict[str, Any]) -> bool:
    """A model call's reservation, or a call journaled without one (before reservations):
    what budgets are charged by (a call made since says ``"reserved": true``)."""
    return kind == "model.reserved" or (kind == "model.called"
                                        and payload.get("reserved") is not True)


def budget_keys(run_id: str, payload: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``(scope, subject)`` buckets a model call is charged in: its tenant and its
    workflow when the payload names them, and its run."""
    return [(BUDGET_SCOPES[f], payload[f]) for f in ("tenant", "workflow")
            if isinstance(payload.get(f), str)] + [(BUDGET_SCOPES["invocation"], run_id)]


def counted_keys(kind: str, run_id: str, payload: dict[str, Any]) -> list[tuple[str, str]]:
    """The usage buckets one event counts in (none for most kinds), with its
    :func:`intent_cost`: an intent's (:func:`usage_keys`), a budget charge's
    (:func:`budget_keys`), a refused proposal's decision (:data:`REFUSALS_SCOPE`, no cost),
    a quota's record (:data:`QUOTA_REACHED`, no cost) — both journals, and the caps
    checked under the writer's lock."""
    if kind == "action.intent":
        return usage_keys(payload)
    if kind == "decision.made":
        agent = payload.get(REFUSED_AGENT)
        return [(REFUSALS_SCOPE, agent)] if isinstance(agent, str) else []
    if kind == QUOTA_REACHED:
        quota, identity = payload.get("quota"), payload.get("identity")
        return [(QUOTA_SCOPE_PREFIX + quota, identity)] \
            if isinstance(quota, str) and isinstance(identity, str) else []
    if charges_budget(kind, payload):
        return budget_keys(run_id, payload)
    return []


#: the latest seq of a subject's events (0: none), for an ``if_last`` event
SUBJECT_LAST_SQL = "SELECT COALESCE(MAX(seq), 0) FROM events WHERE subject = {}"


def head_sql(ph: str, subjects: int) -> str:
    """The head's seq and hash (NULLs in an empty journal), then :data:`SUBJECT_LAST_SQL`
    for each of ``subjects`` parameters — one statement, read under the append's lock,
    where an ``if_last`` append once made one more per guarded subject."""
    lasts = "".join(f", ({SUBJECT_LAST_SQL.format(ph)})" for _ in range(subjects))
    return f"SELECT h.seq, h.hash{lasts} FROM (SELECT 1) AS one LEFT JOIN head h ON h.one = 1"
#: an event kind as the runtime writes them (``run.outcome``, ``proposal.received``)
_KIND = re.compile(r"[a-z][a-z_]*(?:\.[a-z_]+)*")


def kind_term(kind: str, p: str) -> tuple[str, tuple[str, ...]]:
    """``kind = …`` for a query and its parameter: a kind of the runtime's own shape is
    written into the text, anything else bound. A partial index ``WHERE kind = '…'``
    (``events_subject_outcome``, SQLite's ``events_outcome``) can serve only a literal —
    and on SQLite a ``kind = ?`` beside such an index has the statement prepared again at
    every run, about 8 µs, on a hot path (gate 1's submission check)."""
    if _KIND.fullmatch(kind):
        return f"kind = '{kind}'", ()
    return f"kind = {p}", (kind,)


def last_for_subject_sql(kind: str, cols: str, p: str, *, not_by: tuple[str, ...] = (),
                         for_run: tuple[str, str] | None = None,
                         for_action: str | None = None, bound_only: bool = False,
                         dialect: str = "sqlite") -> tuple[str, tuple[str, ...]]:
    """The query of :meth:`.journal.Journal.last_for_subject` (then the subject, then the
    parameters returned): the newest event of one kind about a subject — an outcome
    (``run.outcome``, the answer a resubmitted key gets) through the partial index
    ``events_subject_outcome``, one probe however many ``action.replayed`` events about
    the action came after it (through ``events_subject`` each of them was a row read:
    ``tests/security/test_85``). ``not_by``: the newest whose actor is none of those (the
    database passes over their rows; one row returned). ``for_run`` (a run, the shared
    run): the newest written in that run, or in the shared run naming that run or none in
    its payload's ``for_run`` (evidence collected for a run counts in it alone:
    ``tests/security/test_199``). ``for_action`` (an action's pinned key): the newest whose
    payload's ``for_action`` names it or is absent (``test_247``); ``bound_only``: with
    ``for_run``, an upload naming no run is passed over (``test_248``)."""
    term, args = kind_term(kind, p)
    actor = f" AND actor NOT IN ({', '.join([p] * len(not_by))})" if not_by else ""
    run: tuple[str, ...] = ()
    if for_run is not None:
        named = ("json_extract(payload, '$.for_run')" if dialect == "sqlite"
                 else f"({_pg_payload()} ->> 'for_run')")
        unbound = "" if bound_only else f"{named} IS NULL OR "
        actor += (f" AND (run_id = {p} OR (run_id = {p} AND ({unbound}"
                  f"{named} = {p})))")
        run = (for_run[0], for_run[1], for_run[0])
    if for_action is not None:
        named = ("json_extract(payload, '$.for_action')" if dialect == "sqlite"
                 else f"({_pg_payload()} ->> 'for_action')")
        actor += f" AND ({named} IS NULL OR {named} = {p})"
        run = (*run, for_action)
    return (f"SELECT {cols} FROM events WHERE subject = {p} AND {term}{actor} "
            "ORDER BY seq DESC LIMIT 1"), (*args, *not_by, *run)


def _pg_payload() -> str:
    return pg_payload("payload")


def subject_events_sql(cols: str, p: str, kind: str | None, *, newest: bool,
                       in_run: bool) -> tuple[str, tuple[str, ...]]:
    """At most a limit of events about a subject (of ``kind``, or of any when None), from
    its newest end or its oldest, in one run when ``in_run``: one range of
    ``events_subject (subject, seq)``. Parameters: the subject, those returned, the run id
    (when ``in_run``), the limit."""
    term, args = kind_term(kind, p) if kind is not None else ("", ())
    run = f" AND run_id = {p}" if in_run else ""
    return (f"SELECT {cols} FROM events WHERE subject = {p}{' AND ' + term if term else ''}"
            f"{run} ORDER BY seq {'DESC' if newest else 'ASC'} LIMIT {p}"), args


def events_for_subject_sql(cols: str, p: str, *, in_run: bool, kinds: int) -> str:
    """The events about a subject, oldest first, in one run when ``in_run``, of ``kinds``
    kinds when not 0 (parameters: the subject, the run id, the kinds)."""
    run = f" AND run_id = {p}" if in_run else ""
    only = f" AND kind IN ({', '.join([p] * kinds)})" if kinds else ""
    return f"SELECT {cols} FROM events WHERE subject = {p}{run}{only} ORDER BY seq"


#: the subjects of the approvals asked for, in the order of their first request — of one
#: run (``{run}``: `` WHERE e.run_id = ?``, its events' seqs joined, nothing decoded) or all
APPROVAL_SUBJECTS_SQL = ("SELECT a.subject FROM approval_ids a JOIN events e ON e.seq = a.seq"
                         "{run} GROUP BY a.subject ORDER BY MIN(a.seq)")


#: the event that asked for an approval (its id the one parameter): one probe of
#: ``approval_ids``, one row (``{cols}``: the event's columns prefixed ``e.``)
APPROVAL_REQUEST_SQL = ("SELECT {cols} FROM approval_ids a JOIN events e ON e.seq = a.seq "
                        "WHERE a.approval_id = {p}")


def prefixed(cols: str, table: str = "e") -> str:
    """``cols`` (a comma-separated column list) each prefixed with ``table.``."""
    return ", ".join(f"{table}.{c.strip()}" for c in cols.split(","))


#: whether a run has an event (one probe of the ``events_run`` index), for an
#: ``if_new_run`` event; the events themselves, not the derived ``runs`` table
RUN_BEGUN_SQL = "SELECT EXISTS (SELECT 1 FROM events WHERE run_id = {})"
#: how a run's workflow ended, ``''`` while it has not (one probe of ``run_state``, kept in
#: the appends' own transactions): what an ``if_run_open`` event is checked against
RUN_ENDED_SQL = "SELECT COALESCE((SELECT finished FROM run_state WHERE run_id = {}), '')"


#: the newest events of a kind by an actor from a time on, newest first: their ``at`` and
#: the payload's ``bytes`` (one range of ``events_kind_actor (kind, actor, at)``, read from
#: its newest end; parameters: the kind, the actor, the ISO time, the limit, -1 for none).
#: PostgreSQL's twin: :data:`.pg_schema.RECENT_SIZES_SQL`
RECENT_SIZES_SQL = ("SELECT at, json_extract(payload, '$.bytes') FROM events "
                    "WHERE kind = ? AND actor = ? AND at >= ? ORDER BY at DESC LIMIT ?")


def recent_size(row: tuple[Any, ...]) -> tuple[datetime, int]:
    """One row of :data:`RECENT_SIZES_SQL` (or its twin) as (``at``, bytes): a size that
    is not a non-negative number counts 0 (only the runtime writes these events)."""
    at, size = parse_iso(str(row[0])), row[1]
    if isinstance(size, bool) or not isinstance(size, int | float | Decimal):
        return at, 0
    try:
        return at, max(int(size), 0)
    except (ValueError, OverflowError):  # NaN, infinity
        return at, 0


class KnownRuns:
    """The runs a journal object committed a ``runs`` row for: an append that counts no
    proposal of such a run has nothing to write there (its row exists, and a derived
    rebuild computes it again from the same events), so the statement is left out — two
    of a governed write's three appends. Bounded (forgotten past :attr:`LIMIT`: written
    again, harmlessly, by the next append of a forgotten run); forgotten wholly when the
    journal's head is seen to go back (another journal at the same place)."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._head = 0

    def needed(self, runs: dict[str, list[int]], head: int) -> dict[str, list[int]]:
        """The rows of ``runs`` (:func:`count_run`'s) an append at ``head`` must write."""
        if head < self._head:
            self._ids.clear()
        self._head = head
        return {run_id: row for run_id, row in runs.items()
                if row[1] or run_id not in self._ids}

    def committed(self, runs: dict[str, list[int]], head: int) -> None:
        """The append of ``runs`` committed, its last event at ``head``."""
        if len(self._ids) + len(runs) > self.LIMIT:
            self._ids.clear()
        self._ids.update(runs)
        self._head = head


def settled_intents(events: Sequence[Any]) -> set[int]:
    """The positions in ``events`` (one append's) of the intents that a later
    ``run.outcome`` of the same subject in the same append settles: never open, they are
    not written to ``open_intents`` (a governed read's whole record is one append: its row
    was inserted and deleted in one transaction, pages written for nothing)."""
    settled: set[int] = set()
    pending: dict[str, list[int]] = {}
    for i, event in enumerate(events):
        if event.kind == "action.intent":
            pending.setdefault(event.subject, []).append(i)
        elif event.kind == "run.outcome":
            settled.update(pending.pop(event.subject, ()))
    return settled


def count_run(runs: dict[str, list[int]], *, seq: int, run_id: str, kind: str) -> None:
    """Note one event for :func:`.sqlite_derived.apply_runs` (on PostgreSQL,
    :func:`.pg_schema.runs_statements`)."""
    row = runs.get(run_id)
    if row is None:
        runs[run_id] = [seq, int(kind == "proposal.received")]
    elif kind == "proposal.received":
        row[1] += 1


__all__ = [
    "BUDGET_SCOPES",
    "QUOTA_REACHED",
    "QUOTA_SCOPE_PREFIX",
    "RECENT_SIZES_SQL",
    "RUN_BEGUN_SQL",
    "RUN_ENDED_SQL",
    "SERVER_SCOPE_PREFIX",
    "SUBJECT_LAST_SQL",
    "USAGE_FIELDS",
    "WINDOWED_SCOPES",
    "KnownRuns",
    "budget_keys",
    "charges_budget",
    "count_run",
    "counted_keys",
    "head_sql",
    "intent_cost",
    "recent_size",
    "settled_intents",
    "usage_keys",
    "window_usage",
    "windowed",
]
