"""What a walk's guards cost an append: ``if_run_open`` (the run has not ended, one probe of
``run_state`` under the writer's lock) and ``if_last`` on the step's subject (its newest
seq, one probe of ``events_subject``), against the same append without them.

    .venv/bin/python bench/bench_walk_guards.py [--runs 2000] [--rounds 400] [--postgres]

A SQLite journal in a temp dir (``--postgres``: a PostgreSQL journal on a throw-away
server, ``fsync=on``, :class:`~cradle_kg.storage.pg_scratch.ScratchPostgres`) holds
``runs`` finished workflow runs, then one open run. In the same process it appends,
interleaved, ``rounds`` times each, one ``step.started``-like event to the open
run (each about a step subject of its own, as a walk's first event about a step):

- **plain**: no guard, as a walk's events were appended before ``test_288``;
- **guarded**: ``if_run_open`` and ``if_last`` (0: nothing about the subject yet), as
  :meth:`cradle_kg.workflow.engine.Engine._emit` appends them now.

Each append is durable (its commit flushed), as the engine's are. Prints the median of
each in ms and their ratio. No timing assertion anywhere: figures are for the README.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

from cradle_kg.storage import NewEvent, open_journal

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RUN = "wf:open"
T = TypeVar("T")


def _ev(run: str, kind: str, subject: str, i: int, **guards: object) -> NewEvent:
    return NewEvent(run_id=run, kind=kind, subject=subject, actor="cradle-kg/workflow",
                    at=T0 + timedelta(milliseconds=i), payload={"step": subject, "i": i},
                    **guards)  # type: ignore[arg-type]


def on_scratch_journal(postgres: bool, measure: Callable[[str], T]) -> T:
    """``measure(target)`` on a new journal: a SQLite file in a temp dir, or (``postgres``)
    a schema of a throw-away PostgreSQL server with ``fsync=on`` (also for
    ``bench_approval_guards.py``)."""
    server = None
    with tempfile.TemporaryDirectory() as tmp:
        target = str(Path(tmp) / "journal.sqlite")
        if postgres:
            from cradle_kg.storage.pg_scratch import ScratchPostgres

            server = ScratchPostgres(durable=True)
            target = server.journal_schema()
        try:
            return measure(target)
        finally:
            if server is not None:
                server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--postgres", action="store_true",
                        help="a PostgreSQL journal (default: SQLite in a temp dir)")
    args = parser.parse_args()
    times = on_scratch_journal(args.postgres, lambda t: _race(t, args.runs, args.rounds))
    plain, guarded = (statistics.median(times[k]) for k in ("plain", "guarded"))
    print(f"{'postgresql' if args.postgres else 'sqlite'}, {args.runs} finished runs, "
          f"{args.rounds} appends each (median)")
    print(f"plain    {plain:8.3f} ms")
    print(f"guarded  {guarded:8.3f} ms   ({guarded / plain:.2f}x plain)")


def _race(target: str, runs: int, rounds: int) -> dict[str, list[float]]:
    """The two kinds of append, interleaved; each one's times in ms."""
    with open_journal(target) as journal:
        for lo in range(0, runs, 1000):
            journal.append([e for i in range(lo, min(runs, lo + 1000)) for e in (
                _ev(f"wf:{i}", "workflow.started", f"workflow:w@1#{i}", i),
                _ev(f"wf:{i}", "workflow.completed", "workflow:w", i))])
        journal.append([_ev(RUN, "workflow.started", "workflow:w@1", 0)])
        times: dict[str, list[float]] = {"plain": [], "guarded": []}
        for r in range(rounds):
            for name in (("plain", "guarded") if r % 2 else ("guarded", "plain")):
                subject = f"step:{RUN}/{name}-{r}"
                guards = {"if_run_open": True, "if_last": 0} if name == "guarded" else {}
                event = _ev(RUN, "step.started", subject, r, **guards)
                start = time.perf_counter()
                journal.append([event])
                times[name].append((time.perf_counter() - start) * 1000)
    return times


if __name__ == "__main__":
    main()
