"""``audit verify`` checks what the record means (:mod:`cradle_kg.storage.invariants`), on
both journals: the journals the runtime writes hold every invariant — the golden demo
(approvals, a compensation, an escalation, a replayed key), the golden workflows, a home
with retries, crash recovery and a failed tool — and a journal forged through the append
API, so correctly re-chained, is reported at the forged event, with its invariant named.

Before this pass, a journal holding two contradictory outcomes for one action (what the
stalled worker of ``tests/security/test_55`` wrote) was "intact".
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.records import AuditEvent
from cradle_kg.storage import JOURNAL_URL_ENV, Journal, NewEvent, invariants, open_home_journal
from tests.conftest import make_config, proposal, register_test_tools
from tests.golden.generate import GOLDEN, GOLDENS, load
from tests.inprocess import run_cli
from tests.test_recovery import CLOSE, CREDIT, run_child

pytestmark = pytest.mark.usefixtures("journal_backend")

T = datetime(2026, 6, 1, tzinfo=UTC)


def verify(home: Path) -> dict[str, Any]:
    done = run_cli("audit", "verify", "--semantics", "--home", str(home), "--format", "json")
    report: dict[str, Any] = json.loads(done.stdout)
    assert done.returncode == (0 if report["intact"] else 1)
    return report


def findings(home: Path) -> list[invariants.Finding]:
    """Every invariant's first finding (``audit verify`` reports the first of them)."""
    url = os.environ.get(JOURNAL_URL_ENV)
    if url is None:
        conn = sqlite3.connect(f"file:{home / 'journal.sqlite'}?mode=ro", uri=True)
        try:
            return [f for f in invariants.all_findings("sqlite", conn.execute) if f]
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(url) as pg:
        def rows(sql: str) -> Iterator[Sequence[Any]]:
            with pg.cursor(name="t") as cur:
                cur.execute(sql)
                yield from cur
        return [f for f in invariants.all_findings("postgresql", rows) if f]


# --- what the runtime writes holds them ----------------------------------------------

@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_the_golden_journals_hold_every_invariant(name: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    load(GOLDEN / name, home)
    assert verify(home)["intact"], verify(home)
    assert findings(home) == []


def test_retries_recovery_and_failures_hold_every_invariant(home: Path) -> None:
    # a worker killed after its intent (recovery retries with the same key), one killed
    # during the call of an approved irreversible action (recovery reconciles it)
    for crash_at, p in (("after_intent", CREDIT), ("during_call", CLOSE)):
        done, _ = run_child(home, [p], crash_at=crash_at)
        assert done.returncode == -signal.SIGKILL, done.stderr
        with Runtime(home) as rt:
            assert rt.recovery is not None and rt.recovery.dangling == 1
    with Runtime(home, config=make_config()) as rt:
        register_test_tools(rt)
        # a tool that raises: retried twice with its key, then escalated
        rt.submit(proposal("p-raise", "test.raising", {"value": "v"}, agent="agent:tester",
                           target="test:a"))
        rt.submit(proposal("p-bad", "test.bad_output", {"value": "v"}, agent="agent:tester",
                           target="test:b"))
        # one key chosen by the agent, two proposals: the second is answered from the record
        for pid in ("p-key-1", "p-key-2"):
            rt.submit(proposal(pid, "test.verifier_raises", {"value": "k"},
                               agent="agent:tester", target="test:k",
                               action={"idempotency_key": "k-1"}))
        kinds = {e.kind for e in rt.journal.events()}
    assert {"action.retry", "action.replayed", "human_task.opened",
            "approval.consumed"} <= kinds
    assert verify(home)["intact"]
    assert findings(home) == []


# --- a forged journal, re-chained by the append API, is reported ------------------------

def _demo(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    load(GOLDEN / "demo", home)
    return home


def _first(journal: Journal, kind: str, test: Callable[[AuditEvent], bool] = lambda e: True
           ) -> AuditEvent:
    return next(e for e in journal.events() if e.kind == kind and test(e))


def _copy(e: AuditEvent, **changes: Any) -> NewEvent:
    fields = {"run_id": e.run_id, "kind": e.kind, "subject": e.subject, "actor": e.actor,
              "at": T, "payload": e.payload, "idem_key": None, **changes}
    return NewEvent(**fields)


def _executed(journal: Journal) -> AuditEvent:
    return _first(journal, "run.outcome",
                  lambda e: e.payload["outcome"]["status"] == "executed"
                  and e.subject.startswith("act:"))


def _forged_intent(journal: Journal, *, key: str = "idem:forged", **payload: Any
                   ) -> NewEvent:
    """An intent for a new action, copied from the first one (its decision allowed it)."""
    intent = _first(journal, "action.intent")
    action = {**intent.payload["action"], "id": "act:forged", "idempotency_key": key}
    return _copy(intent, subject="act:forged", idem_key=key,
                 payload={**intent.payload, "action": action, **payload})


def _second_outcome(j: Journal) -> list[NewEvent]:
    done = _executed(j)
    outcome = {**done.payload["outcome"], "status": "escalated"}
    return [_copy(done, payload={"outcome": outcome})]


def _second_intent(j: Journal) -> list[NewEvent]:
    intent = _first(j, "action.intent")
    return [_copy(intent, idem_key="idem:another")]


def _foreign_key(j: Journal) -> list[NewEvent]:
    return [replace(_forged_intent(j), idem_key="idem:not-its-own")]


def _observed_first(j: Journal) -> list[NewEvent]:
    return [_copy(_first(j, "action.observed"), subject="act:nobody")]


def _second_transition(j: Journal) -> list[NewEvent]:
    return [_copy(_first(j, "transition.committed"), subject="st:again")]


def _unverified_commit(j: Journal) -> list[NewEvent]:
    commit = _first(j, "transition.committed")
    transition = {**commit.payload["transition"], "verification_id": "ver:none"}
    return [_forged_intent(j), _copy(commit, subject="st:forged", payload={
        "action_id": "act:forged", "transition": transition})]


def _executed_uncommitted(j: Journal) -> list[NewEvent]:
    done = _executed(j)
    outcome = {**done.payload["outcome"], "action": {**done.payload["outcome"]["action"],
                                                      "id": "act:forged"},
               "transition": {**done.payload["outcome"]["transition"], "id": "st:forged"}}
    return [_forged_intent(j), _copy(done, subject="act:forged", payload={"outcome": outcome})]


def _denied_intent(j: Journal) -> list[NewEvent]:
    denied = _first(j, "decision.made", lambda e: e.payload["decision"]["verdict"] == "deny")
    return [_forged_intent(j, decision_id=denied.subject)]


def _unapproved(j: Journal) -> list[NewEvent]:
    irreversible = _first(j, "action.intent", lambda e: e.payload["approval_id"] is not None)
    action = {**irreversible.payload["action"], "id": "act:forged",
              "idempotency_key": "idem:forged"}
    return [_copy(irreversible, subject="act:forged", idem_key="idem:forged",
                  payload={**irreversible.payload, "action": action, "approval_id": None})]


def _unknown_approval(j: Journal) -> list[NewEvent]:
    return [_forged_intent(j, approval_id="apr:never-asked")]


def _approval_of_another_run(j: Journal) -> list[NewEvent]:
    """The approved irreversible action again, in another run, under the approval a
    person gave in the first one: approved, unexpired, by someone else — not there."""
    irreversible = _first(j, "action.intent", lambda e: e.payload["approval_id"] is not None)
    action = {**irreversible.payload["action"], "id": "act:forged",
              "idempotency_key": "idem:forged"}
    return [_copy(irreversible, run_id="run:elsewhere", subject="act:forged",
                  idem_key="idem:forged", payload={**irreversible.payload, "action": action})]


def _revoke_saying_unused(j: Journal) -> list[NewEvent]:
    """The revoke of an approval an intent ran under, saying nothing of it (its graph would
    read that action unapproved): ``tests/security/test_332``."""
    decided = _first(j, "approval.decided", lambda e: e.payload.get("status") == "approved")
    return [_copy(decided, payload={**decided.payload, "status": "revoked"})]


#: (invariant, the forged events appended; the last is the one reported)
FORGERIES: dict[str, Callable[[Journal], list[NewEvent]]] = {
    "one-settlement": _second_outcome,
    "one-intent": _second_intent,
    "intent-key": _foreign_key,
    "intent-first": _observed_first,
    "one-transition": _second_transition,
    "verified-commit": _unverified_commit,
    "executed-commit": _executed_uncommitted,
    "authorized": _denied_intent,
    "approved": _unapproved,
    "approved:unknown": _unknown_approval,
    "approved:another-run": _approval_of_another_run,
    "revoke-used": _revoke_saying_unused,
}


@pytest.mark.parametrize("invariant", sorted(FORGERIES))
def test_a_forged_rechained_journal_is_reported(invariant: str, tmp_path: Path) -> None:
    home = _demo(tmp_path)
    with open_home_journal(home) as journal:
        forged = journal.append(FORGERIES[invariant](journal))
    report = verify(home)
    assert report["intact"] is False
    assert report["invariant"] == invariant.split(":")[0], report
    assert (report["broken_seq"], report["broken_event"]) == (forged[-1].seq, forged[-1].id)
    # the table output names it as a broken chain is named: where, which event, why
    done = run_cli("audit", "verify", "--semantics", "--home", str(home))
    assert done.returncode == 1
    assert done.stdout.startswith(f"BROKEN at seq {forged[-1].seq} (event `{forged[-1].id}`)")
    assert f"(invariant `{invariant.split(':')[0]}`)" in " ".join(done.stdout.split())


def test_two_outcomes_for_one_action_are_reported_on_each_journal(tmp_path: Path) -> None:
    """The stalled worker's journal (test_55, before its fencing): an action escalated by
    recovery, then executed by the worker that came back — chain intact, record not."""
    home = _demo(tmp_path)
    with open_home_journal(home) as journal:
        done = _executed(journal)
        escalated = {**done.payload["outcome"], "status": "escalated", "reasons": ["recovery"]}
        forged = journal.append([_copy(done, payload={"outcome": escalated})])
    report = verify(home)
    assert report["reason"].startswith(f"action `{done.subject}` is settled twice: a second "
                                       f"`run.outcome` after the one at seq {done.seq}")
    assert report["broken_seq"] == forged[0].seq


def test_without_semantics_verify_checks_the_bytes_only(tmp_path: Path) -> None:
    """The semantic pass is asked for (``--semantics``): plain ``audit verify`` (and
    ``Journal.verify``, which ``journal copy`` and migrations run) checks the chain, the
    head and the derived tables — a re-chained contradiction is intact to it."""
    home = _demo(tmp_path)
    with open_home_journal(home) as journal:
        done = _executed(journal)
        escalated = {**done.payload["outcome"], "status": "escalated", "reasons": ["recovery"]}
        journal.append([_copy(done, payload={"outcome": escalated})])
        assert journal.verify().intact
        assert not journal.verify(semantics=True).intact
    plain = run_cli("audit", "verify", "--home", str(home), "--format", "json")
    assert plain.returncode == 0 and json.loads(plain.stdout)["intact"] is True
    assert verify(home)["invariant"] == "one-settlement"
