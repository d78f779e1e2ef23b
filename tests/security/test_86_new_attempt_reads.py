"""What a new submission of a proposal id reads does not grow with what was written about it.

Finding: gate 1 looks a proposal id up in its run before claiming it
(``recorded_submission``). The claim key answers for an id and attempt already submitted;
for one not yet submitted it fell back to the lookup kept for journals written before
ids were claimed, which decoded *every* event about the id in the run: its replays
(``proposal.replayed``, one per identical resubmission), its refused reuses (a
``proposal.received`` each) and its earlier attempts — all the agent's to write, none
limited (a replay runs nothing). 50 replays of one id made its next attempt decode 51
rows, 500 replays 501; a retry loop that replays and then retries (a new ``attempt``) is
quadratic in its calls.

Now the fallback reads the id's oldest submission in the run (one row, from the oldest end
of ``events_subject``, the other kinds and runs skipped in the index) and the claim of
that submission's attempt (one row): plain submissions all came before the first claimed
one, so an id whose oldest submission in the run was claimed has no plain one, and
nothing else is read — 2 rows, whatever the replays. A journal that has plain
submissions (written before the claim) still finds them. Counted as the event rows the
journal decodes (not time: the machine is shared), on both journals.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus, Proposal
from cradle_kg.storage import NewEvent
from tests.conftest import make_config, proposal

from .reads import rows_read

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def _balance(attempt: int, account: str = "a1", pid: str = "p-x") -> dict[str, Any]:
    return proposal(pid, "demo.ledger.balance", {"account": account}, task_id="t1",
                    attempt=attempt)


def _rows(decoded: Callable[[], int], rt: Runtime, p: dict[str, Any]) -> tuple[int, Any]:
    return rows_read(decoded, lambda: rt.submit(p))


def _about(rt: Runtime, pid: str) -> int:
    return len(rt.journal.events_for_subject(pid, run_id="run:t1"))


def test_a_new_attempt_reads_the_same_whatever_the_replays(
        home: Path, decoded: Callable[[], int]) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        assert rt.submit(_balance(0)).status is OutcomeStatus.EXECUTED
        rows = []
        for attempt, upto in ((1, 10), (2, 60)):
            while _about(rt, "p-x") < upto:  # identical resubmissions: replays
                assert rt.submit(_balance(0)).replayed
            n, outcome = _rows(decoded, rt, _balance(attempt))
            assert outcome.status is OutcomeStatus.EXECUTED and not outcome.replayed
            rows.append(n)
        # before: every event about the id in the run (10 and 60 rows); now 2 and 2
        assert rows[1] <= rows[0] <= 4, rows
        # the id's lookup itself: 2 rows (the oldest submission and its claim)
        from cradle_kg.loop.gate1.keys import recorded_submission

        before = decoded()
        assert recorded_submission(rt.journal, Proposal.model_validate(_balance(3))) is None
        assert decoded() - before == 2
        # the attempts just made are answered from their claims, as before
        assert rt.submit(_balance(2)).replayed


def test_refused_reuses_do_not_grow_the_next_attempt(
        home: Path, decoded: Callable[[], int]) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        assert rt.submit(_balance(0)).ok
        rows = []
        for attempt, reuses in ((1, 5), (2, 40)):
            for i in range(reuses):  # the same id and attempt, other content: refused
                refused = rt.submit(_balance(0, account=f"b{attempt}-{i}"))
                assert refused.status is OutcomeStatus.DENIED
            n, outcome = _rows(decoded, rt, _balance(attempt))
            assert outcome.ok and not outcome.replayed
            rows.append(n)
        # before: every event about the id in the run, each refused reuse's (11 and 92
        # rows); now 2 and 2
        assert rows[1] <= rows[0] <= 4, rows
        assert rt.journal.verify().intact


def test_a_plain_submission_of_an_older_journal_is_still_found(home: Path) -> None:
    """A ``proposal.received`` written without a claim (as before ids were claimed): its
    identical resubmission is the same submission, other content under its id and attempt
    is refused — also after a claimed attempt of the same id came after it."""
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        plain = Proposal.model_validate(_balance(0, pid="p-old"))
        rt.journal.append([NewEvent(
            run_id="run:t1", kind="proposal.received", subject="p-old",
            actor=plain.agent_id, at=datetime.now(UTC),
            payload={"proposal": plain.model_dump(mode="json")})])
        assert rt.submit(_balance(1, pid="p-old")).status is OutcomeStatus.EXECUTED
        reused = rt.submit(_balance(0, account="other", pid="p-old"))
        assert reused.status is OutcomeStatus.DENIED
        assert any("already submitted" in r for r in reused.reasons), reused.reasons
        from cradle_kg.loop.gate1.keys import recorded_submission

        found = recorded_submission(rt.journal, plain)
        assert found is not None and found.payload["proposal"]["id"] == "p-old"
        assert "submission" not in found.payload


def test_subject_events_of_one_run(home: Path, decoded: Callable[[], int]) -> None:
    """``Journal.subject_events(run_id=)``: that run's events of the kind only, from either
    end, at most ``limit`` decoded; without ``run_id`` every run's, as before."""
    at = datetime.now(UTC)
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        rt.journal.append([NewEvent(run_id=f"run:{i % 3}", kind=kind, subject="s",
                                    actor="a", at=at, payload={"i": i})
                           for i in range(12) for kind in ("k", "other")])
        j = rt.journal
        before = decoded()
        assert [e.payload["i"] for e in j.subject_events("s", "k", limit=2, newest=False,
                                                         run_id="run:1")] == [1, 4]
        assert [e.payload["i"] for e in j.subject_events("s", "k", limit=3,
                                                         run_id="run:1")] == [10, 7, 4]
        assert decoded() - before == 5
        assert j.subject_events("s", "k", limit=5, run_id="run:none") == []
        assert [e.payload["i"] for e in j.subject_events("s", "k", limit=2)] == [11, 10]
