"""What the approval guards cost an append (``tests/security/test_305``): an intent under
an approval, written only while no revoke of it is in the journal (one range of
``events_subject``), and a revoke, written only while no intent in its run names the
approval (one range of ``events_run`` from the approving decision on).

    .venv/bin/python bench/bench_approval_guards.py [--events 20000] [--rounds 300] [--postgres]
        [--other-run-requests N]

A SQLite journal in a temp dir (``--postgres``: a PostgreSQL journal on a throw-away
server, ``fsync=on``) holds one approval, asked and approved in run ``run:a``, then
``events`` intents of other actions in that run (an MCP session is one run: what a
revoke's probe reads through) and, with ``--other-run-requests N``, ``N`` requests of the
same action in other runs (an agent asking for it again and again: what a use's probe read
through before ``events_subject_decided``, ~1.5 KB each). In the same process it appends,
interleaved, ``rounds`` times each:

- **intent**: an intent written ``if_run_open``, as an intent under an approval was
  before the guard;
- **intent+guard**: the same with the use's guard (no revoke found);
- **revoke-guard**: an event with the revoke's guard (no intent found), reading the run
  from the head the revoke read before (as ``approvals revoke`` does): what a revoke
  holds the writer's lock for;
- **revoke-read**: the revoke's read of the run's intents from the approving decision on,
  outside the lock (no append): the ``events`` intents;
- **use-read**: the use's probe alone, outside the lock (no append): what the use's guard
  reads under it.

Each append is durable (its commit flushed). Prints the median of each in ms and the
ratio to the plain intent. No timing assertion anywhere: figures are for the README.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench_walk_guards import on_scratch_journal

from cradle_kg.storage import ApprovalGuard, NewEvent, open_journal

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RUN = "run:a"
APPROVAL = "apr:bench"
SUBJECT = "approval:sha256:bench"


def _ev(kind: str, subject: str, i: int, payload: dict[str, Any], run: str = RUN,
        **guards: Any) -> NewEvent:
    return NewEvent(run_id=run, kind=kind, subject=subject, actor="agent:bench",
                    at=T0 + timedelta(milliseconds=i), payload=payload, **guards)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--postgres", action="store_true",
                        help="a PostgreSQL journal (default: SQLite in a temp dir)")
    parser.add_argument("--other-run-requests", type=int, default=0, metavar="N",
                        help="requests of the approval's action in N other runs")
    args = parser.parse_args()
    times = on_scratch_journal(args.postgres, lambda t: _race(
        t, args.events, args.rounds, args.other_run_requests))
    plain = statistics.median(times["intent"])
    print(f"{'postgresql' if args.postgres else 'sqlite'}, {args.events} intents in the "
          f"approval's run, {args.other_run_requests} requests of its action in other runs, "
          f"{args.rounds} appends each (median)")
    for name, got in times.items():
        median = statistics.median(got)
        print(f"{name:13} {median:8.3f} ms   ({median / plain:.2f}x intent)")


def _intent(i: int, **guards: Any) -> NewEvent:
    return _ev("action.intent", f"act:bench-{i}", i,
               {"input_hash": f"sha256:{i}", "approval_id": None, "action": {"id": str(i)}},
               **guards)


def _asked(i: int) -> NewEvent:
    """Another run's request of the approval's action (~1.5 KB, as an agent's proposal)."""
    return _ev("approval.requested", SUBJECT, i, {
        "approval": {"id": f"apr:other-{i}", "run_id": f"run:other-{i}"}, "excluded": [],
        "proposal": {"action": {"arguments": {"note": "x" * 1400}}}}, run=f"run:other-{i}")


def _race(target: str, events: int, rounds: int, others: int = 0) -> dict[str, list[float]]:
    """The kinds of append (and the two reads), interleaved; each one's times in ms."""
    with open_journal(target) as journal:
        journal.append([_ev("approval.requested", SUBJECT, 0, {
            "approval": {"id": APPROVAL, "run_id": RUN}, "excluded": [],
            "proposal": {"action": {}}})])
        [approved] = journal.append([_ev("approval.decided", SUBJECT, 1, {
            "approval_id": APPROVAL, "status": "approved", "approver_id": "user:bob"})])
        for lo in range(0, events, 1000):
            journal.append([_intent(10 + i) for i in range(lo, min(events, lo + 1000))])
        for lo in range(0, others, 1000):
            journal.append([_asked(10 + events + i)
                            for i in range(lo, min(others, lo + 1000))])
        use = ApprovalGuard(APPROVAL, RUN)
        revoke = ApprovalGuard(APPROVAL, RUN, revoking=True, after=approved.seq)
        times: dict[str, list[float]] = {"intent": [], "intent+guard": [], "revoke-guard": [],
                                         "revoke-read": [], "use-read": []}
        base = 10 + events + others
        for r in range(rounds):
            order = list(times) if r % 2 else list(reversed(times))
            for name in order:
                i = base + len(times) * r + order.index(name)
                start = time.perf_counter()
                if name == "revoke-read":
                    journal.approval_moved(revoke)
                elif name == "use-read":
                    journal.approval_moved(use)
                elif name == "revoke-guard":  # an event of another subject, the guard on it
                    since = ApprovalGuard(APPROVAL, RUN, revoking=True,
                                          after=journal.head()[0])
                    start = time.perf_counter()
                    journal.append([_ev("bench.mark", f"mark:{i}", i, {},
                                        approval_guard=since)])
                else:
                    journal.append([_intent(i, if_run_open=True, approval_guard=(
                        use if name == "intent+guard" else None))])
                times[name].append((time.perf_counter() - start) * 1000)
    return times


if __name__ == "__main__":
    main()
