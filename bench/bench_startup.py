"""How long does a light CLI command take, start to exit? (target: <= 0.25 s)

Each command runs as its own process (``python -m cradle_kg ...``) on a demo home, ``--runs``
times, interleaved; printed: wall-clock min and median, and beside them the same for a bare
``python -c pass`` and for ``python -c "import typer, pydantic"`` measured in the same
rounds (the floor any typer CLI pays here). ``-X importtime`` of the slowest command is
summarised (its ten heaviest imports) so the figure says where the time goes.

Run: ``.venv/bin/python bench/bench_startup.py [--runs 5]``. Prints the load average;
asserts nothing.
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

COMMANDS = (("schema",), ("tools", "list"), ("runs", "list"))
BASELINES = {"python -c pass": ["-c", "pass"],
             "import typer, pydantic": ["-c", "import typer, pydantic"]}


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def heaviest(argv: list[str], n: int = 10) -> list[tuple[int, str]]:
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True,
                          text=True, check=False)
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    top = [r for r in rows if not r[1].startswith("   ")]  # top-level imports only
    return sorted(top, reverse=True)[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-startup-")) / "home"
    subprocess.run([sys.executable, "-m", "cradle_kg", "demo", "--home", str(home)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    cases = {" ".join(c): ["-m", "cradle_kg", *c, "--home", str(home)] for c in COMMANDS}
    cases.update(BASELINES)
    times: dict[str, list[float]] = {name: [] for name in cases}
    loads = []
    for _ in range(args.runs):
        loads.append(os.getloadavg()[0])
        for name, argv in cases.items():
            times[name].append(timed(argv))
    print(f"{'command':<26} {'min':>8} {'median':>8}")
    for name, got in times.items():
        print(f"{name:<26} {min(got) * 1e3:7.0f} ms {statistics.median(got) * 1e3:6.0f} ms")
    slowest = max(cases.keys() - BASELINES.keys(), key=lambda n: statistics.median(times[n]))
    print(f"heaviest top-level imports of `{slowest}` (cumulative µs):")
    for us, name in heaviest(cases[slowest]):
        print(f"  {us:>8}  {name.strip()}")
    print(f"load average during the runs: {min(loads):.1f}-{max(loads):.1f}; "
          f"{os.cpu_count()} CPUs; {args.runs} runs each, interleaved")


if __name__ == "__main__":
    main()
