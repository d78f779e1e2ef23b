"""What reading ``config.json`` and the policy files again costs a governed call (test_200).

Since ``tests/security/test_200`` a runtime whose configuration is its home's file checks,
before every decision, whether ``config.json`` or a policy file changed
(``Runtime.refresh``: one ``stat`` per file, nothing parsed while none changed). In one
process, on the demo home (the ledger pack, its policy file), this prints:

* ``Runtime.refresh()`` alone, per call, while nothing changes;
* a read-only governed call's p50 (``demo.ledger.balance``) with the files followed and with
  them not followed (the same runtime, ``policy_set.follows_files = False`` and no
  ``config_file``: what a runtime given its configuration in process does), in interleaved
  rounds so that noise on a shared machine hits both alike, and their ratio.

Run: ``.venv/bin/python bench/bench_live_config.py [--calls N] [--rounds R]``. Prints
figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home


def _read(rt: Runtime, calls: int, tag: str) -> float:
    """The p50 of ``calls`` read-only governed calls, in seconds."""
    took = []
    for i in range(calls):
        proposal = {"id": f"{tag}-{i}", "task_id": "bench", "agent_id": AGENT,
                    "run_id": "run:bench",
                    "action": {"action_type": "demo.ledger.balance",
                               "target": "ledger:acct-1", "arguments": {"account": "acct-1"}}}
        start = time.perf_counter()
        out = rt.submit(proposal)
        took.append(time.perf_counter() - start)
        if out.status.value != "executed":
            raise SystemExit(f"the call was not executed: {out.reasons}")
    return statistics.median(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-live-"))
    try:
        home = tmp / "home"
        prepare_home(home)
        with Runtime(home, graph_sync=False, integrity=False) as rt:
            n = 20_000
            start = time.perf_counter()
            for _ in range(n):
                rt.refresh()
            per = (time.perf_counter() - start) / n
            _read(rt, 50, "warm")
            followed, fixed = [], []
            watch = rt.config_file
            for r in range(args.rounds):
                rt.policy_set.follows_files, rt.config_file = True, watch
                followed.append(_read(rt, args.calls, f"on{r}"))
                rt.policy_set.follows_files, rt.config_file = False, None
                fixed.append(_read(rt, args.calls, f"off{r}"))
            rt.policy_set.follows_files, rt.config_file = True, watch
        print(f"refresh() alone, nothing changed: {per * 1e6:.1f} µs")
        print(f"read-only call p50, files followed: {min(followed) * 1e3:.3f} ms "
              f"(median of rounds {statistics.median(followed) * 1e3:.3f})")
        print(f"read-only call p50, not followed:   {min(fixed) * 1e3:.3f} ms "
              f"(median of rounds {statistics.median(fixed) * 1e3:.3f})")
        print(f"ratio (followed / not, best rounds): {min(followed) / min(fixed):.3f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
