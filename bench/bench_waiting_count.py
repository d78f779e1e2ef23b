"""The count of what waits for a person on an agent's behalf, as the journal's writer's lock
reads it (``waiting_per_agent``), against the open-steps count it had before.

    .venv/bin/python bench/bench_waiting_count.py [--runs 2000 20000] [--rounds 200]

For each size, a SQLite journal in a temp dir holds that many finished workflow runs of
one agent (a ``workflow.started`` each, then its ``workflow.completed``) and a few waiting
(three open human steps, two runs on their way to their review, one approval). In the same
process it times, interleaved, ``rounds`` times each:

- **before**: the open steps' count as it was (a join on every ``workflow.started``: each
  run ever started is read, its agent decoded);
- **now**: every count :func:`cradle_kg.storage.tasks_sql.waiting_sql` makes — the open
  steps' (each open step's run probed for its start) and the three others — as
  ``Journal.waiting`` runs them.

Prints the median of each in ms and their ratio, and checks both count the same steps.
No timing assertion anywhere: figures are for the README.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cradle_kg.storage import NewEvent, open_journal, tasks_sql

AGENT = "agent:a"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
#: the open steps' count before (``tasks_sql.steps_page`` with an agent, then)
BEFORE = ("SELECT COUNT(*) FROM open_steps w JOIN events s ON s.run_id = w.run_id AND "
          "s.kind = 'workflow.started' WHERE json_extract(s.payload, '$.agent') = ?")
STEPS = [["prepare", "tool"], ["review", "human"]]


def _ev(run: str, kind: str, i: int, payload: dict[str, object]) -> NewEvent:
    return NewEvent(run_id=run, kind=kind, subject=f"s:{run}:{kind}", actor="cradle-kg/workflow",
                    at=T0 + timedelta(milliseconds=i), payload=payload)


def build(path: Path, runs: int) -> None:
    started = {"workflow": "w", "agent": AGENT, "steps": STEPS}
    with open_journal(path) as journal:
        for lo in range(0, runs, 1000):
            journal.append([e for i in range(lo, min(runs, lo + 1000)) for e in (
                _ev(f"run:{i}", "workflow.started", i, started),
                _ev(f"run:{i}", "workflow.completed", i, {}))])
        for k in range(3):
            run = f"run:waiting-{k}"
            journal.append([_ev(run, "workflow.started", k, started),
                            _ev(run, "human.requested", k, {"step": "review",
                                                            "input_hash": "h"})])
        for k in range(2):
            journal.append([_ev(f"run:starting-{k}", "workflow.started", k, started)])
        journal.append([_ev("run:asked", "approval.requested", 0,
                            {"approval": {"id": "ap-1", "requested_by": AGENT}})])
        assert journal.waiting(AGENT) == 6


def _timed(conn: sqlite3.Connection, queries: list[tuple[str, list[object]]]) -> float:
    start = time.perf_counter()
    for sql, args in queries:
        conn.execute(sql, args).fetchone()
    return (time.perf_counter() - start) * 1000


def measure(runs: int, rounds: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.sqlite"
        build(path, runs)
        conn = sqlite3.connect(path)
        before = [(BEFORE, [AGENT])]
        now = tasks_sql.waiting_sql("sqlite", AGENT)
        assert conn.execute(BEFORE, [AGENT]).fetchone()[0] == \
            conn.execute(now[1][0], now[1][1]).fetchone()[0] == 3
        old, new = [], []
        for _ in range(rounds):
            old.append(_timed(conn, before))
            new.append(_timed(conn, now))
        conn.close()
    return statistics.median(old), statistics.median(new)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    print("runs      before (open steps) ms   now (all four counts) ms   before / now")
    for runs in args.runs:
        old, new = measure(runs, args.rounds)
        print(f"{runs:<9} {old:>24.3f} {new:>26.3f} {old / new:>14.1f}x")


if __name__ == "__main__":
    main()
