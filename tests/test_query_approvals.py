"""The ``approvals`` named query on a home with approvals in every state a human can leave
them in: approved once and used, approved within a scope until a time and used twice,
approved with an expiry and never used, rejected with a reason, changes requested, and
one still pending (not listed: nobody decided it).

The expected rows are derived from the journal (the truth) — each ``approval.decided``
event, the request it answers, the decision that waited on it and the intents that used
it — never copied from a query's output; with and without the ``approver`` parameter.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.cli.query import open_store
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, prepare_home
from cradle_kg.graph.project import action_node, identity, node
from cradle_kg.graph.queries import QueryCatalog, bind, execute
from cradle_kg.records import ApprovalStatus, AuditEvent

C = "https://w3id.org/cradle#"
Row = tuple[str | None, ...]
COLUMNS = ("approval", "approver", "status", "decidedAt", "scope", "expiresAt",
           "requestedAt", "action", "authorized")


@dataclass
class Home:
    path: Path
    events: list[AuditEvent]


def _close(pid: str, account: str, task: str) -> dict[str, Any]:
    return {"id": pid, "task_id": task, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.close_account",
                       "target": "ledger:" + account, "arguments": {"account": account}}}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Home]:
    path = tmp_path_factory.mktemp("approvals") / "home"
    prepare_home(path)
    token = DEMO_TOKENS[APPROVER]
    with Runtime(path) as rt:
        def wait(pid: str, account: str, task: str) -> str:
            out = rt.submit(_close(pid, account, task))
            assert out.approval is not None, out.reasons
            return out.approval.id

        # approved once, resumed and used
        _, used = rt.decide_approval(wait("p-once", "acct-1", "t-once"), approver_id=APPROVER,
                                     token=token, status=ApprovalStatus.APPROVED)
        assert used is not None and used.ok, used
        # approved within a scope until a time, used; the same action asked again in its
        # run by another proposal is a replay of that execution (same idempotency key)
        reusable = wait("p-scoped-1", "acct-2", "t-scoped")
        _, first = rt.decide_approval(reusable, approver_id=APPROVER, token=token,
                                      status=ApprovalStatus.APPROVED, once=False,
                                      scope="account_closure",
                                      until=rt.clock() + timedelta(hours=2))
        assert first is not None and first.ok, first
        again = rt.submit(_close("p-scoped-2", "acct-2", "t-scoped"))
        assert again.ok and again.approval is None, again.reasons
        # approved with an expiry, never used
        rt.decide_approval(wait("p-unused", "acct-3", "t-unused"), approver_id=APPROVER,
                           token=token, status=ApprovalStatus.APPROVED, once=False,
                           until=rt.clock() + timedelta(hours=1), resume=False)
        rt.decide_approval(wait("p-rejected", "acct-4", "t-rejected"), approver_id=APPROVER,
                           token=token, status=ApprovalStatus.REJECTED, reason="not this one")
        rt.decide_approval(wait("p-changes", "acct-5", "t-changes"), approver_id=APPROVER,
                           token=token, status=ApprovalStatus.CHANGES_REQUESTED,
                           reason="another account")
        wait("p-pending", "acct-6", "t-pending")
        rt.sync_graph()
        events = list(rt.journal.events())
    yield Home(path, events)


def _instant(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _expected(events: list[AuditEvent], approver: str | None = None) -> set[Row]:
    """The rows the query must return, from the journal alone."""
    requested = {e.payload["approval"]["id"]: e.payload["approval"] for e in events
                 if e.kind == "approval.requested"}
    action_of = {e.payload["decision"]["id"]: e.payload.get("action_id") for e in events
                 if e.kind == "decision.made"}
    used: dict[str, list[str]] = {}
    for e in events:
        if e.kind == "action.intent" and e.payload.get("approval_id"):
            used.setdefault(e.payload["approval_id"], []).append(e.payload["decision_id"])
    statuses = {"approved": "Approved", "rejected": "Rejected",
                "changes_requested": "ChangesRequested"}
    rows: set[Row] = set()
    for e in events:
        if e.kind != "approval.decided" or approver not in (None, e.payload["approver_id"]):
            continue
        p = e.payload
        asked = requested[p["approval_id"]]
        scopes = {s for s in (asked.get("scope"), p.get("scope")) if s} or {None}
        action = action_of[asked["decision_id"]]
        for scope in scopes:
            for authorized in used.get(p["approval_id"]) or [None]:
                rows.add((
                    node("approval", p["approval_id"])[1:-1],
                    identity(p["approver_id"])[1:-1], C + statuses[p["status"]],
                    e.at.isoformat(), scope,
                    p["expires_at"] and _instant(p["expires_at"]).isoformat(),  # type: ignore[union-attr]
                    _instant(asked["requested_at"]).isoformat(),  # type: ignore[union-attr]
                    action and action_node(action)[1:-1],
                    authorized and node("decision", authorized)[1:-1]))
    return rows


def _rows(home: Home, **params: str) -> list[Row]:
    query = QueryCatalog.load().get("approvals")
    store = open_store(home.path)
    try:
        result = execute(store, query.text, bound=bind(query, params))
        names = [v.value for v in result.variables]
        assert tuple(names) == COLUMNS
        out: list[Row] = []
        for row in result:
            values = [row[n].value if row[n] is not None else None for n in names]
            for i in (3, 5, 6):  # the instants, compared as instants
                values[i] = values[i] and _instant(values[i]).isoformat()  # type: ignore[union-attr]
            out.append(tuple(values))
        return out
    finally:
        store.close()


@pytest.mark.usefixtures("graph_backend")
def test_approvals_in_every_state_match_the_journal(home: Home) -> None:
    got = _rows(home)
    expected = _expected(home.events)
    assert len(got) == len(set(got))  # no row twice
    assert set(got) == expected
    # every state a decision leaves is listed; the pending request is not
    assert {r[2] for r in got} == {C + "Approved", C + "Rejected", C + "ChangesRequested"}
    decided = {e.payload["approval_id"] for e in home.events if e.kind == "approval.decided"}
    asked = {e.payload["approval"]["id"] for e in home.events
             if e.kind == "approval.requested"}
    assert len(decided) == 5 and len(asked - decided) == 1
    assert {r[0] for r in got} == {node("approval", a)[1:-1] for a in decided}
    # one row each; the two used ones name the decision they authorized, and their action
    assert len(got) == 5
    assert sum(1 for r in got if r[8] is None) == 3  # unused, rejected, changes requested
    assert all(r[7] for r in got)  # every approval was asked for an action
    assert sum(1 for r in got if r[4] == "account_closure") >= 2
    assert sum(1 for r in got if r[5] is not None) == 2  # the two with an expiry
    # ordered by the decision's time, then the approval
    keys = [(r[3], r[0]) for r in got]
    assert keys == sorted(keys)  # type: ignore[type-var]


@pytest.mark.usefixtures("graph_backend")
def test_approvals_by_approver(home: Home) -> None:
    assert set(_rows(home, approver=APPROVER)) == _expected(home.events, APPROVER)
    assert _expected(home.events, APPROVER)
    assert _rows(home, approver="user:alice") == []
