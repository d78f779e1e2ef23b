"""CPU of the in-process governed read: this tree against a baseline tree, alternated.

    cd /tmp && .venv/bin/python /path/to/tree/bench/bench_read_cpu.py \\
        --baseline /path/to/base-tree [--tree /path/to/tree] [--pairs 3] [--calls 600] \\
        [--evict-mb 32]

Each run is a subprocess started from ``/tmp`` with ``PYTHONPATH`` on one tree (so it
imports that tree's ``cradle_kg``, whatever the current directory): it builds the demo
home (:func:`cradle_kg.demo.scenario.prepare_home`), opens a ``Runtime`` and a
``GovernedSession`` on it and calls the ledger's read (``demo.ledger.balance``) — the
call ``mcp serve`` makes in its worker thread, without MCP. It measures the thread's CPU
time (``time.thread_time``) of each call after a warm-up: CPU time does not count the
waits a shared machine's other processes impose, wall-clock does (it still grows with
their load: caches and cores are shared). The background checkpoint thread's CPU is not
counted (it is not on the call's path).

``--evict-mb N`` copies N MB between two calls, outside the measured span: the CPU caches
are then cold at each call, as they are for a server in ``bench/bench_mcp.py``, where the
client and the other servers run between two calls to one server (a read measured back to
back runs with its code and data still in cache, and costs about half as much CPU).

The two trees are run alternately, ``--pairs`` times each, the order swapped every pair;
printed: each run's p50 and its best batch (the lowest median of 20 consecutive calls),
then min / median of the runs' figures per tree and their ratio (tree / baseline).
No timing assertion anywhere: figures are for the README.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = "--child"
#: calls per batch: a run's "best" is its lowest batch median (the batches the machine's
#: other load disturbed least), its "p50" the median of every call
_BATCH = 20


def _child(calls: int, warmup: int, evict_mb: int) -> None:
    from cradle_kg import Runtime
    from cradle_kg.demo.scenario import AGENT, prepare_home
    from cradle_kg.integrations.calls import GovernedSession

    # the copy's source and target: 2 x N MB, more than the machine's last-level cache
    source, target = bytes(evict_mb << 20), bytearray(evict_mb << 20)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        prepare_home(home)
        runtime = Runtime(home)
        try:
            session = GovernedSession(runtime, AGENT)
            spent: list[float] = []
            for i in range(warmup + calls):
                if evict_mb:
                    target[:] = source  # the caches cold, outside the measured span
                cpu = time.thread_time()
                out = session.call("demo.ledger.balance", {"account": "acct-1"})
                took = (time.thread_time() - cpu) * 1000
                if out.is_error:
                    raise SystemExit(f"the governed read failed: {out}")
                if i >= warmup:
                    spent.append(took)
        finally:
            runtime.close()
    batches = [statistics.median(spent[i:i + _BATCH])
               for i in range(0, len(spent) - _BATCH + 1, _BATCH)]
    print(f"{statistics.median(spent):.4f} {min(batches):.4f}")


def _run(tree: Path, calls: int, warmup: int, evict_mb: int) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), _CHILD,
                          str(calls), str(warmup), str(evict_mb)],
                         cwd="/tmp", env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"run on `{tree}` failed:\n{out.stderr[-2000:]}")
    p50, best = out.stdout.strip().splitlines()[-1].split()
    return float(p50), float(best)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--evict-mb", type=int, default=0,
                        help="MB copied between two calls (the caches cold at each call)")
    args = parser.parse_args()
    trees = {"baseline": args.baseline.resolve(), "tree": args.tree.resolve()}
    runs: dict[str, list[tuple[float, float]]] = {"baseline": [], "tree": []}
    print(f"{args.calls} calls a run after {args.warmup}; "
          + (f"{args.evict_mb} MB copied between two calls (caches cold)" if args.evict_mb
             else "back to back (caches warm)"), flush=True)
    for pair in range(args.pairs):
        order = ["baseline", "tree"] if pair % 2 == 0 else ["tree", "baseline"]
        for name in order:
            p50, best = _run(trees[name], args.calls, args.warmup, args.evict_mb)
            runs[name].append((p50, best))
            load = os.getloadavg()[0]
            print(f"pair {pair + 1} {name:8} CPU p50 {p50:.3f}, best batch {best:.3f} "
                  f"ms/call  (load {load:.1f})", flush=True)
    for i, stat in enumerate(("p50", "best batch")):
        print(f"-- {stat} (min / median of the runs)")
        got = {name: [r[i] for r in runs[name]] for name in runs}
        for name in ("baseline", "tree"):
            print(f"{name:8} {trees[name]}: {min(got[name]):.3f} / "
                  f"{statistics.median(got[name]):.3f} ms")
        ratio_min = min(got["tree"]) / min(got["baseline"])
        ratio_med = statistics.median(got["tree"]) / statistics.median(got["baseline"])
        print(f"ratio tree / baseline: min {ratio_min:.3f}, median {ratio_med:.3f} "
              f"(the tree costs {(ratio_med - 1) * 100:+.1f} % of the baseline's CPU by the "
              "median: negative is cheaper)")

if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == _CHILD:
        _child(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
