"""Writer processes on one embedded home (SQLite journal): throughput and latency, 1 / 2 / 4.

Issue 17, target 4: *two processes on one home ≥ 1.4 times one, p99 ≤ twice single-process*. Each
writer is a process with its own :class:`~cradle_kg.Runtime` on the same home — the
embedded default: ``<home>/journal.sqlite`` and the home's on-disk graph store, which a
runtime brings up to the journal when it is read and at close, not after each call. After a
warm-up the writers start together (a barrier) and each submits ``--calls`` governed
writes (``demo.ledger.credit``: gate 1, Cedar, the intent — a durable commit —, the call,
gate 2's verifier, the integrity check, the outcome — a second durable commit). Every
call's latency is kept; throughput is all calls over the wall time from the barrier to the
last writer done. Counts are interleaved round by round (a burst of load on this shared
machine hits each alike) and every ratio is against the 1-writer figures of the same
round: throughput ratio, and p50 / p99 against the 1-writer p50 / p99.

Run: ``.venv/bin/python bench/bench_writers.py [--calls 200] [--writers 1,2,4] [--rounds 3]``.
Prints figures; asserts only that every call executed, the ledger holds every credit once
and the journal's chain is intact.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from cradle_kg import Runtime
from cradle_kg.config import save_config
from cradle_kg.demo.scenario import AGENT, demo_config, prepare_home
from cradle_kg.storage import JOURNAL_URL_ENV, SqliteJournal


def _proposal(writer: int, i: int, tag: str) -> dict[str, Any]:
    # a step per call: each its own idempotency key (one key: every call a replay)
    return {"id": f"{tag}-w{writer}-{i}", "task_id": f"task-{tag}-{writer}",
            "agent_id": AGENT, "step": i,
            "action": {"action_type": "demo.ledger.credit", "target": f"ledger:acct-{writer}",
                       "arguments": {"account": f"acct-{writer}", "amount": 1}}}


def _writer(home: Path, writer: int, calls: int, tag: str, barrier: Any, out: Any) -> None:
    os.setsid()  # as separate services would run: each its own session
    rt = Runtime(home)
    try:
        for i in range(3):  # warm-up: imports, caches, the policy set activation
            rt.submit(_proposal(writer, i, tag + "-warm"))
        barrier.wait()
        start = time.perf_counter()
        ms: list[float] = []
        executed = 0
        for i in range(calls):
            t = time.perf_counter()
            done = rt.submit(_proposal(writer, i, tag))
            executed += done.status.value == "executed" and not done.replayed
            ms.append((time.perf_counter() - t) * 1000)
        out.put((writer, start, time.perf_counter(), executed, ms))
    finally:
        rt.close()


def _create(home: Path) -> None:
    Runtime(home).close()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(home: Path, n: int, calls: int, tag: str) -> dict[str, float]:
    ctx = multiprocessing.get_context("fork")  # the parent holds no connection, no thread
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(home, w, calls, tag, barrier, out))
             for w in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=900) for _ in procs]
    for p in procs:
        p.join(60)
        if p.exitcode != 0:
            raise RuntimeError(f"a writer failed (exit {p.exitcode})")
    executed = sum(r[3] for r in results)
    if executed != n * calls:
        raise RuntimeError(f"{n * calls - executed} calls were not executed")
    wall = max(r[2] for r in results) - min(r[1] for r in results)
    ms = [x for r in results for x in r[4]]
    return {"writers": n, "calls": executed, "calls_per_second": executed / wall,
            "p50_ms": _pct(ms, 0.5), "p99_ms": _pct(ms, 0.99)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="governed writes per writer")
    parser.add_argument("--writers", default="1,2,4", help="writer counts, side by side")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.pop(JOURNAL_URL_ENV, None)  # the embedded journal, whatever the shell says
    counts = [int(x) for x in args.writers.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="cradle-bench-writers-"))
    load_before = os.getloadavg()
    rounds: list[dict[int, dict[str, float]]] = []
    try:
        home = tmp / "home"
        prepare_home(home)
        save_config(home / "config.json", demo_config().model_copy(update={"limits": ()}))
        # the journal and the graph store exist before the race — made in a child: the
        # parent must hold no thread (RocksDB's pool) when it forks the writers
        ctx = multiprocessing.get_context("fork")
        first = ctx.Process(target=_create, args=(home,))
        first.start()
        first.join(120)
        for r in range(args.rounds):
            rounds.append({n: measure(home, n, args.calls, f"r{r}n{n}") for n in counts})
        with SqliteJournal(home / "journal.sqlite") as journal:
            report = journal.verify()
        if not report.intact:
            raise RuntimeError(f"the journal does not verify: {report.reason}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = counts[0]
    ratios = {n: {"throughput": [x[n]["calls_per_second"] / x[base]["calls_per_second"]
                                 for x in rounds],
                  "p50": [x[n]["p50_ms"] / x[base]["p50_ms"] for x in rounds],
                  "p99": [x[n]["p99_ms"] / x[base]["p99_ms"] for x in rounds]}
              for n in counts}
    figures = {"rounds": [{str(n): row for n, row in x.items()} for x in rounds],
               "ratios_to_first": {str(n): v for n, v in ratios.items()},
               "journal_events": report.events, "chain_intact": report.intact,
               "load_before": [round(x, 1) for x in load_before],
               "load_after": [round(x, 1) for x in os.getloadavg()], "cpus": os.cpu_count()}
    if args.json:
        print(json.dumps(figures, indent=2))
        return

    def mm(values: list[float], fmt: str = "{:.2f}") -> str:
        return f"{fmt.format(min(values))} / {fmt.format(statistics.median(values))}"

    print(f"{args.rounds} rounds x {args.calls} governed writes per writer, one SQLite home; "
          f"min / median over rounds; ratios against {base} writer(s) in the same round")
    print(f"{'writers':>7}  {'calls/s':>15}  {'throughput x':>13}  {'p50 ms':>13}  "
          f"{'p99 ms':>15}  {'p50 x':>11}  {'p99 x':>11}")
    for n in counts:
        rows = [x[n] for x in rounds]
        print(f"{n:>7}  {mm([r['calls_per_second'] for r in rows], '{:.1f}'):>15}  "
              f"{mm(ratios[n]['throughput']):>13}  {mm([r['p50_ms'] for r in rows]):>13}  "
              f"{mm([r['p99_ms'] for r in rows]):>15}  {mm(ratios[n]['p50']):>11}  "
              f"{mm(ratios[n]['p99']):>11}")
    print(f"journal: {report.events} events, chain intact; load average "
          f"{figures['load_before'][0]} -> {figures['load_after'][0]}; "
          f"{os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
