"""Attack review (many workers, an operator's or the network's doing): a worker's lease
session ended alone (``pg_terminate_backend`` of that backend, a fault on that one
connection) while the worker lives and its journal session is fine.

Finding: the worker went on writing intents naming the lease it had lost. The next
proposal's intent was journaled under the dead lease — one any other worker's recovery
pass may take over at once — and only then, before the call, was the lease found lost and
renewed: the proposal was refused ``Superseded`` ("this worker's lease … was lost before
the call"), its intent left to another worker's recovery, though nothing had happened to
it; the loss was written to no log.

Now: a new intent names a lease the worker holds (``WorkerContext.held_lease``): a lost
one is renewed first, and the worker says so in its log (the lost lease, the new one, and
that the intents under the lost one are recovery's). The proposal executes, once. An
intent already written under the lost lease is as before (``test_55``): its call is not
made, another worker's recovery reconciles it, one outcome, one effect.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import demo_ledger
from cradle_kg.loop import gateway
from tests.conftest import make_config
from tests.security.test_472_pg_journal_session_ended_alone import credit, terminate


def _drop_lease(rt: Runtime, url: str) -> str:
    lost = rt.lease.id
    terminate(url, int(rt.lease._conn.info.backend_pid))  # type: ignore[attr-defined]
    return lost


def _outcomes(rt: Runtime) -> Counter[str]:
    return Counter(e.subject for e in rt.journal.events_of_kind("run.outcome"))


@pytest.mark.parametrize("journal_backend", ["postgresql"], indirect=True)
def test_a_worker_whose_lease_session_ended_takes_a_new_lease_before_its_intent(
        home: Path, journal_backend: str, pg_url: str, caplog: pytest.LogCaptureFixture
        ) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        assert rt.submit(credit("p-1", 10)).status.value == "executed"
        lost = _drop_lease(rt, pg_url)
        assert not rt.journal.worker_alive(lost)
        with caplog.at_level(logging.WARNING, logger="cradle_kg.loop.context"):
            out = rt.submit(credit("p-2", 20))
        assert out.status.value == "executed", out.reasons
        assert rt.lease.id != lost and rt.journal.worker_alive(rt.lease.id)
        intents = rt.journal.events_of_kind("action.intent")
        assert [e.payload["worker"] for e in intents][1:] == [rt.lease.id]
        assert any(lost in r.getMessage() and rt.lease.id in r.getMessage()
                   and "was lost" in r.getMessage() for r in caplog.records)
        with Runtime(home, recover=False, graph_sync=False) as other:
            assert other.recover().items == []  # nothing of A's left to reconcile
        assert set(_outcomes(rt).values()) == {1}
    assert set(Counter(k for k, _ in demo_ledger(home).applied_calls()).values()) == {1}


@pytest.mark.parametrize("journal_backend", ["postgresql"], indirect=True)
def test_an_intent_under_the_lost_lease_is_recoverys_and_the_next_is_the_workers(
        home: Path, journal_backend: str, pg_url: str, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """The lease goes after an intent is written under it, and another worker's recovery
    takes that intent over (a same-key retry of the ledger's credit): the worker does not
    call the tool again, and its next proposal executes under its new lease."""
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        taken: list[list[str]] = []

        def lease_lost_after_the_intent(name: str) -> None:
            if name == "after_intent" and not taken:  # A's intent (not B's retry, below)
                taken.append([])
                _drop_lease(rt, pg_url)
                with Runtime(home, recover=False, graph_sync=False) as other:
                    taken[0] = [i.result for i in other.recover().items]

        monkeypatch.setattr(gateway, "crashpoint", lease_lost_after_the_intent)
        out = rt.submit(credit("p-1", 10))
        assert taken == [["retried"]]
        assert any("lease" in r for r in out.reasons), out
        monkeypatch.undo()
        assert rt.submit(credit("p-2", 20)).status.value == "executed"
        assert set(_outcomes(rt).values()) == {1} and len(_outcomes(rt)) == 2
        assert rt.journal.verify().intact and rt.journal.dangling_intents() == []
    assert set(Counter(k for k, _ in demo_ledger(home).applied_calls()).values()) == {1}
