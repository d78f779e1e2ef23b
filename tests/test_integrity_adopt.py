"""The commit-time check's projection of a commit is adopted by the run's cached graph
when exactly those events are written (per-call cost, issue 12): the cache must stay what
folding the journal gives, whatever happened — reads, writes, a commit another hook
refused (its transition rewritten after the check), a denial, an approval."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.loop.integrity import IntegrityChecker, _RunGraph
from cradle_kg.storage import NewEvent

from .conftest import proposal

# the journal on each backend (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def _fresh(rt: Runtime, run_id: str, checker: IntegrityChecker) -> _RunGraph:
    graph = _RunGraph(checker.projectors, checker.keep, checker.classes)
    for ev in rt.journal.events(run_id=run_id):
        graph.fold(ev)
    return graph


def _same(a: _RunGraph, b: _RunGraph) -> None:
    assert {k: sorted(v) for k, v in a.groups.items()} == {
        k: sorted(v) for k, v in b.groups.items()}
    assert sorted(a.misc) == sorted(b.misc)
    assert dict(a.owner) == dict(b.owner)
    assert a.uses == b.uses


def test_the_cached_run_is_what_the_journal_folds_to(rt: Runtime,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    checker = rt.integrity
    assert checker is not None
    adopted: list[int] = []
    real_adopt = _RunGraph.adopt

    def counting(self: _RunGraph, checked: Any) -> None:
        adopted.append(len(checked.payloads))
        real_adopt(self, checked)

    monkeypatch.setattr(_RunGraph, "adopt", counting)
    steps = iter(range(1, 100))

    def at(pid: str, tool: str, args: dict[str, object]) -> dict[str, object]:
        return proposal(pid, tool, args, run_id="run:adopt", step=next(steps))

    refuse = {"on": False}

    def sometimes(run_id: str, events: Sequence[NewEvent]) -> Sequence[str]:
        return ["rule t: refused for the test"] if refuse["on"] else []

    rt.commit_hooks.append(sometimes)
    outcomes = [rt.submit(at("a1", "demo.ledger.balance", {"account": "acct-1"}))]
    outcomes.append(rt.submit(at("a2", "demo.ledger.credit", {"account": "acct-1", "amount": 3})))
    refuse["on"] = True
    outcomes.append(rt.submit(at("a3", "demo.ledger.credit", {"account": "acct-1", "amount": 4})))
    outcomes.append(rt.submit(at("a4", "demo.ledger.balance", {"account": "acct-1"})))
    refuse["on"] = False
    outcomes.append(rt.submit(at("a5", "demo.ledger.credit",
                                 {"account": "acct-1", "amount": 10_000})))
    outcomes.append(rt.submit(at("a6", "demo.ledger.close_account", {"account": "acct-9"})))
    outcomes.append(rt.submit(at("a7", "demo.ledger.balance", {"account": "acct-1"})))
    assert [o.status for o in outcomes] == [
        OutcomeStatus.EXECUTED, OutcomeStatus.EXECUTED, OutcomeStatus.FAILED,
        OutcomeStatus.FAILED, OutcomeStatus.DENIED, OutcomeStatus.AWAITING_APPROVAL,
        OutcomeStatus.EXECUTED]
    assert len(adopted) >= 3  # the committed calls (a1 was folded from the journal first)
    run_id = outcomes[0].run_id
    cached = checker._cache[run_id]
    _same(cached, _fresh(rt, run_id, checker))
    # and the check still sees what it must: a refused commit stays refused
    kinds = [e.kind for e in rt.journal.events(run_id=run_id)]
    assert kinds.count("transition.aborted") == 2
    assert kinds.count("transition.committed") == 3


def test_a_commit_is_projected_once(rt: Runtime) -> None:
    """After the check, writing the commit folds only the outcome into the cache."""
    import cradle_kg.loop.integrity as integrity

    rt.submit(proposal("b0", "demo.ledger.balance", {"account": "acct-1"}))
    folded: list[str] = []
    real = integrity._fold

    def counting(triples: list[str], ev: object, *args: object, **kw: object) -> list[str]:
        folded.append(ev.kind)  # type: ignore[attr-defined]
        return real(triples, ev, *args, **kw)  # type: ignore[arg-type]

    setattr(integrity, "_fold", counting)  # noqa: B010
    try:
        assert rt.submit(proposal("b1", "demo.ledger.balance",
                                  {"account": "acct-1"})).status is OutcomeStatus.EXECUTED
    finally:
        setattr(integrity, "_fold", real)  # noqa: B010
    # each event once (by the check), and the outcome, which the check did not see, once
    assert sorted(folded) == sorted(set(folded))
    assert "run.outcome" in folded and "action.intent" in folded
