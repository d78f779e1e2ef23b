"""The lineage rules on the four AgentDojo suites, side by side (the README's figures).

It replays the benchmark's reference calls through the runtime; it runs no model.
Run: ``.venv/bin/python bench/eval_agentdojo.py [--suite NAME ...] [--version V]
[--attack NAME] [--failures]`` (defaults: v1, important_instructions).
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cradle_kg.errors import CradleError
from cradle_kg.integrations.agentdojo import ATTACK_NAME, SUITES, VERSION, evaluate_suite


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", action="append", choices=SUITES)
    ap.add_argument("--version", default=VERSION, help="benchmark version (default v1)")
    ap.add_argument("--attack", default=ATTACK_NAME, help="attack (default %(default)s)")
    ap.add_argument("--failures", action="store_true", help="list every failure")
    args = ap.parse_args()
    print(f"AgentDojo {args.version}, attack {args.attack} — replays the benchmark's "
          "reference calls; runs no model")
    print(f"{'suite':<11}{'utility':>14}{'attacker writes':>20}{'seconds':>10}")
    totals = [0, 0, 0, 0]
    for suite in args.suite or SUITES:
        t0 = time.perf_counter()
        try:
            r = evaluate_suite(suite, version=args.version, attack=args.attack).to_json()
        except CradleError as exc:
            sys.exit(f"error: {exc}")
        u, s = r["utility"], r["security"]
        totals = [totals[0] + u["passed"], totals[1] + u["total"],
                  totals[2] + s["attacker_writes_executed"], totals[3] + s["pairs"]]
        print(f"{suite:<11}{u['passed']:>6}/{u['total']:<3} {100 * u['passed'] / u['total']:>3.0f}%"
              f"{s['attacker_writes_executed']:>12}/{s['pairs']:<7}"
              f"{time.perf_counter() - t0:>10.1f}")
        if s.get("injection_tasks_without_reference_calls"):
            print("   no reference calls (pairs measure nothing):",
                  s["injection_tasks_without_reference_calls"])
        if args.failures:
            for f in u["failures"]:
                print("   utility:", f["user_task"], [c["tool"] for c in f["calls"]])
            for f in s["failures"]:
                print("   security:", f["user_task"], f["injection_task"], f["executed"])
    print(f"{'all':<11}{totals[0]:>6}/{totals[1]:<3} {100 * totals[0] / totals[1]:>3.0f}%"
          f"{totals[2]:>12}/{totals[3]:<7}")


if __name__ == "__main__":
    main()
