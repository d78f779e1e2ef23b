"""How much memory does a strict replay take, against the journal it replays?

One run of N credits (half allowed, half denied: 5 and 2 events each, one run, one task)
per size, written by the runtime into a home under ``bench/out/`` (kept: the next run of
the bench reuses it). For each size, in one process:

* **decoded**: the Python allocations of the journal's events read into a list — what a
  replay held before ``tests/security/test_526`` (every event, decoded);
* **source**: what an open ``replay.Source`` keeps, indexed (positions, ids, keys);
* **replay peak**: the peak of ``strict_replay`` over the home, above what was allocated
  before it.

Printed with each figure's ratio to the smallest size's. Target: *source* and *replay
peak* grow far slower than *decoded* (before: the replay's peak grew by more than the
decoded journal). tracemalloc counts Python's allocations, not SQLite's page cache (a
bounded cache). Run:
``PYTHONPATH=. .venv/bin/python bench/bench_replay_memory.py [--sizes 100,400,1600]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import tracemalloc
from pathlib import Path

from cradle_kg import Proposal, Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.storage.opening import JOURNAL_URL_ENV, open_home_journal
from cradle_kg.workflow.replay import Source, strict_replay

OUT = Path(__file__).parent / "out" / "replay_memory"


def home_of(n: int) -> Path:
    home = OUT / f"credits-{n}"
    if not (home / "journal.sqlite").is_file():
        write_run(home, n)
    return home


def write_run(home: Path, n: int) -> None:
    """A demo home with one run of ``n`` credits, half allowed, half denied (``tests/
    security/test_526`` measures the same)."""
    prepare_home(home)
    with Runtime(home, graph_sync=False) as rt:
        for i in range(n):
            rt.submit(Proposal.model_validate({
                "id": f"p{i}", "task_id": "t-long", "run_id": "run-long",
                "agent_id": "agent:ledger-assistant",
                "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-1",
                           "arguments": {"account": "acct-1",
                                         "amount": 2000 if i % 2 else 10 + i % 900}}}))


def measure(home: Path) -> tuple[int, int, int, int]:
    """(events, decoded bytes, source bytes, replay peak bytes): the journal's events
    decoded and held, what an open source keeps, a strict replay's peak, in bytes of
    Python allocations (``tests/security/test_526`` asserts on the same)."""
    gc.collect()
    tracemalloc.start()
    try:
        with open_home_journal(home, must_exist=True) as journal:
            base = tracemalloc.get_traced_memory()[0]
            held = list(journal.events())
            events, decoded = len(held), tracemalloc.get_traced_memory()[0] - base
            del held
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        with Source.open(home) as source:
            source.runs()
            kept = tracemalloc.get_traced_memory()[0] - base
        gc.collect()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        strict_replay(home)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return events, decoded, kept, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,400,1600",
                        help="credits per run, comma-separated (at most 2,000: half are "
                             "refused, and the demo agent may have 1,000 refused an hour)")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    os.environ.pop(JOURNAL_URL_ENV, None)  # each home's own SQLite file
    first: tuple[int, int, int, int] | None = None
    print(f"{'credits':>8} {'events':>7} {'decoded MB':>11} {'source MB':>10} "
          f"{'replay peak MB':>15}   ratios to the first size (decoded/source/peak)")
    for n in sizes:
        got = measure(home_of(n))
        first = first or got
        ratios = "/".join(f"{got[k] / first[k]:.2f}" for k in (1, 2, 3))
        print(f"{n:>8} {got[0]:>7} {got[1] / 1e6:>11.2f} {got[2] / 1e6:>10.2f} "
              f"{got[3] / 1e6:>15.2f}   {ratios}", flush=True)


if __name__ == "__main__":
    main()
