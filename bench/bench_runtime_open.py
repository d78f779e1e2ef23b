"""What does opening and closing a runtime cost, and how much of it is reading files again?

A process that opens many runtimes — a test suite, a host serving several homes, a worker
restarted in place — used to parse the integrity rules and its packs' shapes with rdflib
(~20 ms) and list every installed distribution's entry points (~15 ms) at each start.
``load_shapes`` now keeps what it read by the files' paths and bytes, and the packs' entry
points are listed again only when a folder of ``sys.path`` changes.

Each round builds a fresh home (``prepare_home``, the demo's configuration) and times
``Runtime(home)`` then ``close()`` (which opens the graph store and brings it up to the
journal) in this process, alternating two ways:

* **cold** — both kept listings emptied first: what every start paid before;
* **kept** — as a runtime opens now, the shapes and entry points read by an earlier one.

Printed: min and median of each, and their ratio (same process, same rounds: the
machine's load falls on both). Run: ``.venv/bin/python bench/bench_runtime_open.py
[--rounds 15]``; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def _forget() -> None:
    from cradle_kg.graph import shacl
    from cradle_kg.packs import registry

    with shacl._READ_LOCK:
        shacl._READ.clear()
    with registry._LISTED_LOCK:
        registry._LISTED.clear()


def _open_close(base: Path, n: int) -> float:
    from cradle_kg import Runtime
    from cradle_kg.demo.scenario import demo_config, prepare_home

    home = base / f"home-{n}"
    prepare_home(home)
    started = time.perf_counter()
    rt = Runtime(home, config=demo_config())
    rt.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-open-") as tmp:
        base = Path(tmp)
        _open_close(base, -1)  # imports and first reads, in neither column
        cold: list[float] = []
        kept: list[float] = []
        for n in range(args.rounds):
            _forget()
            cold.append(_open_close(base, 2 * n))
            kept.append(_open_close(base, 2 * n + 1))
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} rounds, fresh home each")
    for name, times in (("cold (shapes and entry points read again)", cold),
                        ("kept (as a runtime opens now)", kept)):
        print(f"  {name:44} min {min(times) * 1000:6.1f} ms  "
              f"median {statistics.median(times) * 1000:6.1f} ms")
    print(f"  kept / cold, medians: {statistics.median(kept) / statistics.median(cold):.2f}x")


if __name__ == "__main__":
    main()
