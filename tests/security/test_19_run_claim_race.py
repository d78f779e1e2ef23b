"""Two agents racing for the first proposal of a new run (left open by the run-ownership
fix, test_20): the check ("nobody proposed in this run yet") and the first proposal were two
steps, so both agents' calls could land in one run — the second agent then spoke in the
first one's run. An entry point now *claims* a new run in the journal (``run.claimed``,
whose key the journal holds once) before it journals anything in it, so of two racing
agents exactly one owns the run, whatever the interleaving, on one process or several."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.integrations.calls import GovernedSession, HostMeta

from .mcp_http import AGENT, MALLORY, two_agent_home

CREDIT = "demo.ledger.credit"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return two_agent_home(tmp_path / "home")


@pytest.fixture
def runtimes(home: Path) -> Iterator[tuple[Runtime, Runtime]]:
    """Two runtimes on one home: two journal connections, as two processes have."""
    with Runtime(home) as first, Runtime(home) as second:
        yield first, second


def _actors(rt: Runtime, run_id: str) -> set[str]:
    return {e.actor for e in rt.journal.events(run_id=run_id)
            if e.kind in ("proposal.received", "run.claimed", "input.recorded")}


def _stale_first_look(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """``rt``'s first read of a run's owner answers "nobody" (read before the other agent's
    write landed); later reads are the journal's."""
    real = rt.journal.run_agent
    looks = iter([None])

    def run_agent(run_id: str) -> str | None:
        return next(looks) if looks.__length_hint__() else real(run_id)

    monkeypatch.setattr(rt.journal, "run_agent", run_agent)


def test_a_stale_no_owner_read_cannot_put_a_second_agent_in_the_run(
        runtimes: tuple[Runtime, Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    """The interleaving that used to win, forced: Mallory's entry point read "no owner"
    before Alice's first call landed. Refused; nothing of Mallory's in Alice's run."""
    alice_rt, mallory_rt = runtimes
    alice = GovernedSession(alice_rt, AGENT)
    mallory = GovernedSession(mallory_rt, MALLORY)
    _stale_first_look(mallory_rt, monkeypatch)  # Mallory's first look: still nobody's
    assert alice.call(CREDIT, {"account": "acct-1", "amount": 5}).status == "executed"
    theirs = mallory.call(CREDIT, {"account": "acct-1", "amount": 7},
                          HostMeta(run=alice.run_id, input={"text": "move it all",
                                                            "author": "user:mallory"}))
    assert theirs.status == "refused", theirs.text
    assert theirs.structured["reason_codes"] == ["run_not_yours"]
    assert _actors(alice_rt, alice.run_id) == {AGENT}
    assert alice_rt.journal.verify().intact


def test_a_run_named_by_a_host_before_any_claim_stays_its_first_proposals(
        runtimes: tuple[Runtime, Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's own code (in process) proposed first, without a claim: an agent whose
    stale read let it claim the run afterwards is still refused — the run's owner is the
    actor of its first proposal or claim, in journal order."""
    host_rt, mallory_rt = runtimes
    host_rt.submit({"id": "p1", "task_id": "t", "run_id": "run:shared", "agent_id": AGENT,
                    "action": {"action_type": CREDIT, "target": "ledger:acct-1",
                               "arguments": {"account": "acct-1", "amount": 5}}})
    _stale_first_look(mallory_rt, monkeypatch)
    theirs = GovernedSession(mallory_rt, MALLORY).call(
        CREDIT, {"account": "acct-1", "amount": 7}, HostMeta(run="run:shared"))
    assert theirs.status == "refused", theirs.text
    assert not any(e.actor == MALLORY and e.kind == "proposal.received"
                   for e in host_rt.journal.events(run_id="run:shared"))


def test_two_agents_racing_for_new_runs_never_share_one(
        runtimes: tuple[Runtime, Runtime]) -> None:
    """Real threads on two journal connections, released together for each of 12 new runs:
    exactly one agent lands in each run, and the other's call is refused."""
    alice_rt, mallory_rt = runtimes
    rounds = 12
    barrier = threading.Barrier(2)
    results: dict[str, list[str]] = {AGENT: [], MALLORY: []}

    def agent(rt: Runtime, who: str) -> None:
        session = GovernedSession(rt, who)
        for i in range(rounds):
            barrier.wait()
            out = session.call(CREDIT, {"account": "acct-1", "amount": 1},
                               HostMeta(run=f"run:race-{i}"))
            results[who].append(out.status)

    threads = [threading.Thread(target=agent, args=(rt, who))
               for rt, who in ((alice_rt, AGENT), (mallory_rt, MALLORY))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(len(r) == rounds for r in results.values())
    for i in range(rounds):
        statuses = sorted((results[AGENT][i], results[MALLORY][i]))
        assert statuses == ["executed", "refused"], (i, statuses)
        assert len(_actors(alice_rt, f"run:race-{i}")) == 1
    assert alice_rt.journal.verify().intact
