"""What the record must mean, not only its bytes: ``audit verify``'s semantic pass.

The hash chain proves that no event was changed since it was chained, not that the events
make sense: a journal written by an older version, by a bug, or by someone who re-chained
it can hold an action settled twice, a transition committed without a verification, an
intent with no decision that allowed it — and still be "intact". Every journal this
runtime writes holds the invariants below (``tests/storage/test_journal_invariants.py``
builds one of each kind and breaks each invariant in turn); ``audit verify`` checks them
after the chain and the derived tables, on both journals, with the same SQL in two
dialects. A finding is reported like a broken chain: exit 1, the first offending event
(lowest seq) named, and the invariant's name.

An *action* is the subject of an ``action.intent`` (``act:<key>``). Events about it carry
its id as their subject (observations, retries, replays, compensations, outcomes) or in
``action_id`` (verifications, transitions).

================  ======================================================================
one-intent        an action has one ``action.intent``
intent-key        that intent claims (``idem_key``) the idempotency key its action carries
one-key           no two events claim one key — re-derived from the rows, not read from
                  the UNIQUE index that enforces it (integrity rule 8)
intent-first      every observation, retry, replay, compensation, verification, transition
                  and outcome carrying an action is about an action whose intent is
                  earlier (intent before act)
one-settlement    an action has at most one ``run.outcome`` after its intent: retries,
                  replays (``action.replayed``), compensation and recovery settle it once;
                  an ``awaiting_approval`` or a denial is about the *proposal*, not the
                  action
one-transition    an action has at most one transition, committed or aborted
verified-commit   a committed transition names a ``verified`` verification of its action,
                  written before it (integrity rule 3)
executed-commit   an action's outcome is ``executed`` exactly when its transition was
                  committed before it
authorized        an intent names a ``decision.made`` before it whose verdict is ``allow``,
                  granted to the identity that executed the action (rules 1, 6, 7)
approved          a high-risk or irreversible action runs under an approval; an intent
                  that names an approval runs under one approved before it, not by its
                  executor, not expired at the intent, asked for in the intent's run by
                  the intent's agent (rule 2: an approval never leaves its run, nor the
                  agent whose action it approved)
revoke-used       a revoke says ``"used": true`` exactly when an intent of its approval's
                  run named the approval before it (what the graph keeps ``Approved``)
================  ======================================================================

Cost: each invariant is one query, streamed; none holds more than a row in memory. The
probes go through ``events_subject (subject, seq)`` (one or two per intent, outcome,
transition), the event kinds through ``events_kind_actor (kind, …)`` on SQLite and
``events_kind (kind, seq)`` on PostgreSQL, an approval's events through ``approval_ids``;
``one-key`` and ``one-transition`` group rows by a value no index holds (the key, read
without its index; a transition's ``action_id``) with a window function, which both
databases sort on disk past their memory budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..isotime import parse_iso
from .chain import ChainReport
from .run_state_sql import pg_payload

Dialect = Literal["sqlite", "postgresql"]
#: runs one query and streams its rows (a server-side cursor on PostgreSQL)
Rows = Callable[[str], Iterator[Sequence[Any]]]

#: events about an action that carry its id as their subject (its intent apart)
_BY_SUBJECT = ("action.observed", "action.retry", "action.replayed", "compensation.requested",
               "compensation.recorded")
#: events about an action that carry its id in ``action_id``
_BY_ACTION_ID = ("verification.recorded", "transition.committed", "transition.aborted")


@dataclass(frozen=True, slots=True)
class Finding:
    """The first event (lowest seq) that breaks an invariant."""

    seq: int
    event_id: str
    invariant: str
    reason: str


def _j(d: Dialect, alias: str, *path: str) -> str:
    """A payload field as text (NULL when absent or JSON null)."""
    if d == "sqlite":
        return f"json_extract({alias}.payload, '$.{'.'.join(path)}')"
    inner = "".join(f" -> '{p}'" for p in path[:-1])
    return f"({pg_payload(f'{alias}.payload')}{inner} ->> '{path[-1]}')"


def _in(kinds: Iterable[str]) -> str:
    return "(" + ", ".join(f"'{k}'" for k in kinds) + ")"


def _intent_before(subject: str, seq: str) -> str:
    return (f"EXISTS (SELECT 1 FROM events i WHERE i.subject = {subject} "
            f"AND i.kind = 'action.intent' AND i.seq < {seq})")


def _first(select: str) -> str:
    return f"SELECT * FROM ({select}) f ORDER BY 1 LIMIT 1"


# --- the queries: each yields (seq, id, subject, detail) of its first offending event -----

def _one_intent(d: Dialect) -> str:
    return _first(
        "SELECT e.seq, e.id, e.subject, (SELECT MIN(i.seq) FROM events i WHERE "
        "i.subject = e.subject AND i.kind = 'action.intent') AS detail FROM events e "
        "WHERE e.kind = 'action.intent' AND " + _intent_before("e.subject", "e.seq"))


def _intent_key(d: Dialect) -> str:
    key = _j(d, "e", "action", "idempotency_key")
    return _first(
        f"SELECT e.seq, e.id, e.subject, COALESCE(e.idem_key, 'null') AS detail FROM events e "
        f"WHERE e.kind = 'action.intent' AND (e.idem_key IS NULL OR {key} IS NULL "
        f"OR e.idem_key <> {key})")


def _one_key(d: Dialect) -> str:
    # INVARIANT: read from the rows, not the UNIQUE index (which enforces what is checked)
    rows = "events NOT INDEXED" if d == "sqlite" else "events"
    return _first(
        "SELECT seq, id, idem_key AS subject, first_seq AS detail FROM (SELECT seq, id, idem_key, "
        "ROW_NUMBER() OVER (PARTITION BY idem_key ORDER BY seq) AS n, "
        "MIN(seq) OVER (PARTITION BY idem_key) AS first_seq "
        f"FROM {rows} WHERE idem_key IS NOT NULL) k WHERE n > 1")


def _intent_first(d: Dialect) -> str:
    action = _j(d, "e", "action_id")
    carried = _j(d, "e", "outcome", "action", "id")
    return _first(
        f"SELECT e.seq, e.id, e.subject, e.kind AS detail FROM events e "
        f"WHERE e.kind IN {_in(_BY_SUBJECT)} AND NOT {_intent_before('e.subject', 'e.seq')} "
        f"UNION ALL SELECT e.seq, e.id, COALESCE({action}, 'null'), e.kind FROM events e "
        f"WHERE e.kind IN {_in(_BY_ACTION_ID)} AND ({action} IS NULL OR "
        f"NOT {_intent_before(action, 'e.seq')}) "
        f"UNION ALL SELECT e.seq, e.id, e.subject, e.kind FROM events e "
        f"WHERE e.kind = 'run.outcome' AND {carried} IS NOT NULL AND ({carried} <> e.subject "
        f"OR NOT {_intent_before('e.subject', 'e.seq')})")


def _one_settlement(d: Dialect) -> str:
    return _first(
        "SELECT o.seq, o.id, o.subject, (SELECT MIN(p.seq) FROM events p WHERE "
        "p.subject = i.subject AND p.kind = 'run.outcome' AND p.seq > i.seq) AS detail "
        "FROM events i JOIN events o ON o.subject = i.subject AND o.kind = 'run.outcome' "
        "AND o.seq > i.seq WHERE i.kind = 'action.intent' AND EXISTS (SELECT 1 FROM events p "
        "WHERE p.subject = i.subject AND p.kind = 'run.outcome' AND p.seq > i.seq "
        "AND p.seq < o.seq)")


def _one_transition(d: Dialect) -> str:
    action = _j(d, "e", "action_id")
    return _first(
        "SELECT seq, id, a AS subject, first_seq AS detail FROM (SELECT e.seq, e.id, "
        f"{action} AS a, ROW_NUMBER() OVER (PARTITION BY {action} ORDER BY e.seq) AS n, "
        f"MIN(e.seq) OVER (PARTITION BY {action}) AS first_seq FROM events e "
        "WHERE e.kind IN ('transition.committed', 'transition.aborted')) t "
        "WHERE n > 1 AND a IS NOT NULL")


def _verified_commit(d: Dialect) -> str:
    names = _j(d, "e", "transition", "verification_id")
    return _first(
        f"SELECT e.seq, e.id, COALESCE({_j(d, 'e', 'action_id')}, 'null'), "
        f"COALESCE({names}, 'null') AS detail FROM events e "
        f"WHERE e.kind = 'transition.committed' AND NOT EXISTS (SELECT 1 FROM events v "
        f"WHERE v.subject = {names} AND v.kind = 'verification.recorded' AND v.seq < e.seq "
        f"AND {_j(d, 'v', 'verification', 'status')} = 'verified' "
        f"AND {_j(d, 'v', 'action_id')} = {_j(d, 'e', 'action_id')})")


def _executed_commit(d: Dialect) -> str:
    status = _j(d, "o", "outcome", "status")
    committed = (f"EXISTS (SELECT 1 FROM events t WHERE t.subject = "
                 f"{_j(d, 'o', 'outcome', 'transition', 'id')} "
                 f"AND t.kind = 'transition.committed' AND t.seq < o.seq "
                 f"AND {_j(d, 't', 'action_id')} = o.subject)")
    action = _j(d, "e", "action_id")
    return _first(
        f"SELECT o.seq, o.id, o.subject, COALESCE({status}, 'null') AS detail FROM events o "
        f"WHERE o.kind = 'run.outcome' AND {_intent_before('o.subject', 'o.seq')} AND "
        f"(({status} = 'executed' AND NOT {committed}) OR "
        f"({status} <> 'executed' AND {committed})) "
        f"UNION ALL SELECT e.seq, e.id, {action}, 'no outcome' FROM events e "
        f"WHERE e.kind = 'transition.committed' AND NOT EXISTS (SELECT 1 FROM events o "
        f"WHERE o.subject = {action} AND o.kind = 'run.outcome' AND o.seq > e.seq)")


def _authorized(d: Dialect) -> str:
    decision = _j(d, "e", "decision_id")
    executor = _j(d, "e", "action", "executed_by")
    return _first(
        f"SELECT e.seq, e.id, e.subject, COALESCE({decision}, 'null') AS detail FROM events e "
        f"WHERE e.kind = 'action.intent' AND ({executor} IS NULL OR {executor} <> e.actor "
        f"OR NOT EXISTS (SELECT 1 FROM events m WHERE m.subject = {decision} "
        f"AND m.kind = 'decision.made' AND m.seq < e.seq "
        f"AND {_j(d, 'm', 'decision', 'verdict')} = 'allow' "
        f"AND {_j(d, 'm', 'decision', 'granted_to')} = {executor}))")


def _unapproved(d: Dialect) -> str:
    return _first(
        f"SELECT e.seq, e.id, e.subject, COALESCE({_j(d, 'e', 'action', 'risk_level')}, "
        f"'null') || ', ' || COALESCE({_j(d, 'e', 'action', 'side_effect_class')}, 'null') "
        f"AS detail FROM events e WHERE e.kind = 'action.intent' "
        f"AND {_j(d, 'e', 'approval_id')} IS NULL "
        f"AND ({_j(d, 'e', 'action', 'risk_level')} = 'high' "
        f"OR {_j(d, 'e', 'action', 'side_effect_class')} = 'irreversible')")


def _said_used(d: Dialect, alias: str) -> str:
    """The revoke ``alias`` says ``"used": true`` (a JSON ``true``, as the graph reads it)."""
    if d == "sqlite":
        return f"json_type({alias}.payload, '$.used') = 'true'"
    p = pg_payload(f"{alias}.payload")
    return f"COALESCE(json_typeof({p} -> 'used') = 'boolean' AND ({p} ->> 'used') = 'true', false)"


def _revoke_used(d: Dialect) -> str:
    """A revoke whose ``used`` is not what its run holds: ``"used": true`` exactly when an
    intent of the approval's run named the approval before it (``tests/security/
    test_332``). Each revoke, one range of ``events_run`` up to it."""
    used = (f"EXISTS (SELECT 1 FROM events i WHERE i.run_id = v.run_id AND i.seq < v.seq "
            f"AND i.kind = 'action.intent' AND {_j(d, 'i', 'approval_id')} = "
            f"{_j(d, 'v', 'approval_id')})")
    said = _said_used(d, "v")
    return _first(
        f"SELECT v.seq, v.id, COALESCE({_j(d, 'v', 'approval_id')}, 'null') AS subject, "
        f"CASE WHEN {said} THEN 'used' ELSE 'unused' END AS detail FROM events v "
        f"WHERE v.kind = 'approval.decided' AND {_j(d, 'v', 'status')} = 'revoked' "
        f"AND (CASE WHEN {said} THEN 1 ELSE 0 END) <> (CASE WHEN {used} THEN 1 ELSE 0 END)")


def approvals_sql(d: Dialect) -> str:
    """Every intent that names an approval, in seq order, with the approval's approving
    decision written before it by someone else than the executor, and the approval's
    request in the intent's run by the intent's agent (NULLs: none): seq, id, subject,
    approval id, the intent's time, that decision's ``expires_at``, its seq, the
    request's seq, the seq of a revoke of the approval written before the intent (NULL:
    none — ``tests/security/test_305``)."""
    approval = _j(d, "e", "approval_id")
    digest = f"(SELECT s.subject FROM approval_ids s WHERE s.approval_id = {approval})"
    found = (f"(SELECT a.seq FROM events a WHERE a.subject = {digest} "
             f"AND a.kind = 'approval.decided' "
             f"AND a.seq < e.seq AND {_j(d, 'a', 'approval_id')} = {approval} "
             f"AND {_j(d, 'a', 'status')} = 'approved' "
             f"AND {_j(d, 'a', 'approver_id')} <> e.actor ORDER BY a.seq DESC LIMIT 1)")
    asked = (f"(SELECT r.seq FROM events r WHERE r.subject = {digest} "
             f"AND r.kind = 'approval.requested' AND r.seq < e.seq "
             f"AND {_j(d, 'r', 'approval', 'id')} = {approval} "
             f"AND {_j(d, 'r', 'approval', 'run_id')} = e.run_id "
             f"AND {_j(d, 'r', 'approval', 'requested_by')} = e.actor LIMIT 1)")
    revoked = (f"(SELECT v.seq FROM events v WHERE v.subject = {digest} "
               f"AND v.kind = 'approval.decided' AND v.seq < e.seq "
               f"AND {_j(d, 'v', 'approval_id')} = {approval} "
               f"AND {_j(d, 'v', 'status')} = 'revoked' LIMIT 1)")
    return (f"SELECT e.seq, e.id, e.subject, {approval}, e.at, "
            f"(SELECT {_j(d, 'x', 'expires_at')} FROM events x WHERE x.seq = {found}), "
            f"{found}, {asked}, {revoked} FROM events e WHERE e.kind = 'action.intent' "
            f"AND {approval} IS NOT NULL ORDER BY e.seq")


def _approval_problem(row: Sequence[Any]) -> Finding | None:
    seq, event_id, subject, approval, at, expires, decided, asked, revoked = row
    if revoked is not None:
        return Finding(int(seq), str(event_id), "approved",
                       f"action `{subject}` was executed under approval `{approval}`, which "
                       f"was revoked before it (seq {revoked})")
    if decided is None:
        return Finding(int(seq), str(event_id), "approved",
                       f"action `{subject}` was executed under approval `{approval}`, which "
                       "was not approved before it by someone other than its executor")
    if asked is None:
        return Finding(int(seq), str(event_id), "approved",
                       f"action `{subject}` was executed under approval `{approval}`, which "
                       "was asked for in another run or by another agent")
    if expires is not None:
        try:
            expired = parse_iso(str(expires)) <= parse_iso(str(at))
        except ValueError:
            expired = True
        if expired:
            return Finding(int(seq), str(event_id), "approved",
                           f"action `{subject}` was executed at `{at}` under approval "
                           f"`{approval}`, which expired at `{expires}`")
    return None


@dataclass(frozen=True, slots=True)
class Invariant:
    name: str
    sql: Callable[[Dialect], str]
    #: the reason, from the offending event's subject and the query's detail
    says: Callable[[str, Any], str]


INVARIANTS = (
    Invariant("one-intent", _one_intent,
              lambda s, d: f"action `{s}` has a second `action.intent` (the first is at "
                           f"seq {d})"),
    Invariant("intent-key", _intent_key,
              lambda s, d: f"the intent of action `{s}` does not claim its action's "
                           f"idempotency key (it claims `{d}`)"),
    Invariant("one-key", _one_key,
              lambda s, d: f"key `{s}` is claimed a second time (first at seq {d}): its "
                           "UNIQUE index was bypassed"),
    Invariant("intent-first", _intent_first,
              lambda s, d: f"`{d}` about action `{s}` has no `action.intent` of that action "
                           "before it"),
    Invariant("one-settlement", _one_settlement,
              lambda s, d: f"action `{s}` is settled twice: a second `run.outcome` after the "
                           f"one at seq {d}"),
    Invariant("one-transition", _one_transition,
              lambda s, d: f"action `{s}` has a second transition (the first is at seq {d})"),
    Invariant("verified-commit", _verified_commit,
              lambda s, d: f"the transition of action `{s}` is committed without a "
                           f"`verified` verification `{d}` of it before it"),
    Invariant("executed-commit", _executed_commit,
              lambda s, d: f"action `{s}` has a committed transition but no outcome after it"
              if d == "no outcome" else f"the outcome of action `{s}` is `{d}`, but its "
              "transition " + ("was not committed before it" if d == "executed"
                               else "was committed")),
    Invariant("authorized", _authorized,
              lambda s, d: f"action `{s}` was executed without an `allow` decision (`{d}`) "
                           "before it granted to its executor"),
    Invariant("approved", _unapproved,
              lambda s, d: f"action `{s}` ({d}) was executed without an approval"),
    Invariant("revoke-used", _revoke_used,
              lambda s, d: f"the revoke of approval `{s}` says it was {d}, but " + (
                  "no intent of its run named it before" if d == "used" else
                  "an intent of its run named it before")),
)


def check(dialect: Dialect, rows: Rows) -> Finding | None:
    """The first event (lowest seq) that breaks an invariant, or None."""
    found = [f for f in all_findings(dialect, rows) if f is not None]
    return min(found, key=lambda f: f.seq) if found else None


def all_findings(dialect: Dialect, rows: Rows) -> list[Finding | None]:
    """Each invariant's first finding (None: it holds), in :data:`INVARIANTS` order, the
    approvals' expiry and approver last."""
    out: list[Finding | None] = []
    for inv in INVARIANTS:
        first = _first_row(rows(inv.sql(dialect)))
        out.append(None if first is None else Finding(
            int(first[0]), str(first[1]), inv.name, inv.says(str(first[2]), first[3])))
    stream = rows(approvals_sql(dialect))
    try:
        out.append(next((p for p in map(_approval_problem, stream) if p), None))
    finally:
        _close(stream)
    return out


def report(chain: ChainReport, finding: Finding | None) -> ChainReport:
    """The chain's report, broken at ``finding`` when there is one."""
    if finding is None:
        return chain
    return ChainReport(False, chain.events, chain.head_hash, finding.seq, finding.event_id,
                       f"{finding.reason} (invariant `{finding.invariant}`): no journal this "
                       "runtime writes holds that — written by an older version, a bug, or "
                       "edited and re-chained", invariant=finding.invariant)


def _first_row(it: Iterator[Sequence[Any]]) -> Sequence[Any] | None:
    try:
        return next(it, None)
    finally:
        _close(it)


def _close(it: Iterator[Sequence[Any]]) -> None:
    """Release a stream the caller stops reading early (a PostgreSQL cursor)."""
    close = getattr(it, "close", None)
    if close is not None:
        close()


__all__ = ["INVARIANTS", "Finding", "Invariant", "Rows", "all_findings", "approvals_sql",
           "check", "report"]
