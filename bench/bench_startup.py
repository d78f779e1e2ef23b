"""How long does a light CLI command take, start to exit? (target: <= 0.25 s)

Each command runs as its own process (``python -m cradle_kg ...``), ``--runs`` times,
interleaved with three floors measured in the same rounds:

* ``python -c pass`` — the interpreter and this virtualenv's ``site``;
* ``import typer`` — typer alone;
* a one-command typer app (an option of each kind our commands use, parsed and run) —
  what any typer command line pays here: typer coerces its parameters through pydantic
  ``TypeAdapter``\\ s, so pydantic and its plugin scan come with it.

Printed per command: wall-clock and CPU time (user + system of the child: less sensitive
to the load of a shared machine than wall-clock) as min and median, and the ratio of its
min to each floor's min. Commands: ``schema`` (the list of records), ``schema Proposal``,
``tools list`` on a home with no pack and on the demo home (three packs, whose Python
``tools list`` must import to know their tools), ``runs list`` on the demo home. Then
``-X importtime`` of each command: its heaviest top-level imports, so the figure says
where the time goes.

Bytecode: the children run with Python's default, ``.pyc`` files cached in
``__pycache__`` (after one warm-up round, so no measured run compiles), as every install
does. An environment that sets ``PYTHONDONTWRITEBYTECODE`` over a tree without
``__pycache__`` (a fresh worktree here) makes each command compile its ~90 modules from
source again: ~80 ms of CPU of ``tools list`` on the demo home (cProfile: ``compile``).
``--no-bytecode-cache`` keeps the inherited environment and skips the warm-up (``.pyc``
files already written are still read; only modules without one compile).

Run: ``.venv/bin/python bench/bench_startup.py [--runs 5]``. Prints the load average;
asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TYPER_APP = """
from pathlib import Path
from typing import Annotated
import typer
app = typer.Typer(add_completion=False)
@app.command()
def first(name: str = "", flag: Annotated[bool, typer.Option("--list")] = False,
          home: Annotated[Path | None, typer.Option("--home")] = None,
          limit: Annotated[int, typer.Option(min=1)] = 50) -> None:
    print(name, flag, home, limit)
@app.command()
def second() -> None:
    pass
app()
"""
FLOORS = {"python -c pass": ["-c", "pass"],
          "import typer": ["-c", "import typer"],
          "one-command typer app": ["-c", TYPER_APP, "first", "--list", "--home", "h"]}


ENV = dict(os.environ)


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall-clock, CPU) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, env=ENV)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def heaviest(argv: list[str], n: int = 8) -> list[tuple[int, str]]:
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True,
                          text=True, check=False, env=ENV)
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
    parser.add_argument("--no-importtime", action="store_true")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep PYTHONDONTWRITEBYTECODE as inherited (no warm-up round)")
    args = parser.parse_args()
    if not args.no_bytecode_cache:
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    root = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    demo, bare = root / "demo", root / "bare"
    subprocess.run([sys.executable, "-m", "cradle_kg", "demo", "--home", str(demo)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    commands = {
        "schema": ["schema"],
        "schema Proposal": ["schema", "Proposal"],
        "tools list (no pack)": ["tools", "list", "--home", str(bare)],
        "tools list (demo, 3 packs)": ["tools", "list", "--home", str(demo)],
        "runs list (demo)": ["runs", "list", "--home", str(demo)],
    }
    cases = {name: ["-m", "cradle_kg", *argv] for name, argv in commands.items()}
    cases.update(FLOORS)
    wall: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    loads = []
    cached = "off" if args.no_bytecode_cache and os.environ.get("PYTHONDONTWRITEBYTECODE") \
        else "on"
    if cached == "on":
        for argv in cases.values():  # warm-up: write the .pyc files, not measured
            timed(argv)
    for _ in range(args.runs):
        loads.append(os.getloadavg()[0])
        for name, argv in cases.items():
            w, c = timed(argv)
            wall[name].append(w)
            cpu[name].append(c)
    floor_names = list(FLOORS)
    print(f"{'':<27} {'wall min':>9} {'median':>7} {'cpu min':>8} {'median':>7}   "
          "wall min / floor: " + " | ".join(floor_names))
    for name in cases:
        w, c = wall[name], cpu[name]
        ratios = " | ".join(f"{min(w) / min(wall[f]):.2f}x" for f in floor_names)
        print(f"{name:<27} {min(w) * 1e3:6.0f} ms {statistics.median(w) * 1e3:4.0f} ms "
              f"{min(c) * 1e3:5.0f} ms {statistics.median(c) * 1e3:4.0f} ms   {ratios}")
    print("cpu min / floor (one-command typer app): " + ", ".join(
        f"{name} {min(cpu[name]) / min(cpu['one-command typer app']):.2f}x"
        for name in commands))
    if not args.no_importtime:
        for name, argv in cases.items():
            if name in FLOORS:
                continue
            print(f"heaviest top-level imports of `{name}` (cumulative µs):")
            for us, mod in heaviest(argv):
                print(f"  {us:>8}  {mod.strip()}")
    print(f"load average during the runs: {min(loads):.1f}-{max(loads):.1f}; "
          f"{os.cpu_count()} CPUs; {args.runs} runs each, interleaved; bytecode cache {cached}")


if __name__ == "__main__":
    main()
