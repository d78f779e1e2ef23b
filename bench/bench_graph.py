"""The graph's three figures, in one process (issue "Execution ontology, RDF projection…").

1. commit-time integrity check of one run's graph (what runs before every commit):
   p50 of ``IntegrityChecker.check`` vs pySHACL on the same graph and shapes —
   target >= 100x faster and < 2 ms;
2. ``validate --all`` on a store of >= 1,000,000 triples made by the real runtime: the
   real command, end to end (``cradle-kg validate --all --home H`` in a fresh process:
   start-up, store open + sync, fetching, validation, report), best and median of
   ``--runs``, vs pySHACL on the store's N-Quads dump (in a child process, killed after
   ``--timeout`` s) — target >= 50x faster, pySHACL's time taken as the timeout when it
   cannot finish (``--skip-pyshacl``: taken as the timeout without running it);
3. projection / rebuild throughput into the on-disk store vs raw pyoxigraph
   ``bulk_extend`` of the same quads into an on-disk store — target >= 60 %.

Run: ``.venv/bin/python bench/bench_graph.py [--triples 1000000] [--timeout 600]
[--skip-pyshacl] [--only validate]``.
Prints figures; asserts nothing. The big home is cached in bench/out/.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyoxigraph as ox

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_shacl import _pyshacl_worker
from synthetic import build_home

from cradle_kg.demo.scenario import run_demo
from cradle_kg.graph.catchup import rebuild
from cradle_kg.graph.project import event_triples, ntriples
from cradle_kg.graph.shacl import PyShaclEngine, load_shapes
from cradle_kg.graph.vocab import INTEGRITY_SHAPES_FILE
from cradle_kg.loop.integrity import IntegrityChecker
from cradle_kg.storage import SqliteJournal as Journal
from cradle_kg.storage.oxigraph import OxigraphStore


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def commit_check(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "demo"
        run_demo(home)
        journal = Journal(home / "journal.sqlite")
        run = "run:task-close"  # the approval run: the richest one
        checker = IntegrityChecker(journal)
        triples = [t for ev in journal.events(run_id=run) for t in event_triples(ev, header=False)]
        checker.check(run, [])  # warm the run cache, as a live runtime has it
        rust = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            assert not checker.check(run, [])
            rust.append(time.perf_counter() - t0)
        py_engine = PyShaclEngine(load_shapes([INTEGRITY_SHAPES_FILE], builtin=False))
        text = ntriples(triples)
        py = []
        for _ in range(max(5, repeat // 100)):
            t0 = time.perf_counter()
            assert py_engine.validate(text, format="nt").conforms
            py.append(time.perf_counter() - t0)
        journal.close()
    r50, p50 = statistics.median(rust), statistics.median(py)
    print(f"[1] commit-time check of one run ({len(triples)} triples): "
          f"rust p50 {r50 * 1e3:.3f} ms p99 {pct(rust, .99) * 1e3:.3f} ms; "
          f"pyshacl p50 {p50 * 1e3:.1f} ms -> {p50 / r50:.0f}x "
          f"(targets >=100x and <2 ms: {'met' if p50 / r50 >= 100 and r50 < .002 else 'NOT met'})")


def rebuild_throughput(home: Path, rounds: int) -> None:
    """``rounds`` interleaved pairs (our rebuild, then raw ``bulk_extend`` of its quads)."""
    journal = Journal(home / "journal.sqlite")
    ours_s: list[float] = []
    raw_s: list[float] = []
    n = 0
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="bench-rebuild-") as tmp:
            ours = OxigraphStore(Path(tmp) / "ours")
            t0 = time.perf_counter()
            rebuild(ours, journal)
            ours_s.append(time.perf_counter() - t0)
            quads = list(ours.store)
            ours.close()
            raw_store = ox.Store(str(Path(tmp) / "raw"))
            t0 = time.perf_counter()
            raw_store.bulk_extend(quads)
            raw_store.flush()
            raw_s.append(time.perf_counter() - t0)
            del raw_store
            n = len(quads)
    journal.close()
    med = statistics.median
    print(f"[3] rebuild from the journal, {n:,} quads, {rounds} rounds: ours min "
          f"{min(ours_s):.1f} s / median {med(ours_s):.1f} s ({n / med(ours_s):,.0f} quads/s); "
          f"raw bulk_extend min {min(raw_s):.1f} s / median {med(raw_s):.1f} s "
          f"({n / med(raw_s):,.0f} quads/s) -> ratio of medians {med(raw_s) / med(ours_s):.0%},"
          f" best to best {min(raw_s) / min(ours_s):.0%} (target >= 75%); load "
          f"{os.getloadavg()[0]:.1f}")


def validate_all(home: Path, runs: int) -> float:
    """The user-facing command in a fresh process each time; returns the median."""
    cli = Path(sys.executable).with_name("cradle-kg")
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run([str(cli), "validate", "--all", "--home", str(home)],
                              capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - t0)
        if done.returncode not in (0, 1):
            raise SystemExit(f"validate --all failed ({done.returncode}): {done.stderr}")
    head = done.stdout.splitlines()[0] if done.stdout else ""
    median = statistics.median(times)
    print("[2] validate --all end to end: " + " ".join(f"{t:.2f}" for t in times) +
          f" s (best {min(times):.2f}, median {median:.2f}) -> {head}")
    return median


def pyshacl_all(home: Path, timeout: float) -> float:
    """pySHACL over the store's N-Quads dump, in a child killed after ``timeout``."""
    with tempfile.TemporaryDirectory(dir=home.parent) as tmp:
        dump = Path(tmp) / "all.nq"
        store = OxigraphStore(home / "graph", read_only=True)
        dump.write_text(store.nquads(), encoding="utf-8")
        del store
        queue: mp.Queue[tuple[bool, int, float]] = mp.Queue()
        proc = mp.Process(target=_pyshacl_worker, args=(str(dump), queue))
        proc.start()
        proc.join(timeout)
        if proc.is_alive():
            proc.terminate()
            proc.join()
            print(f"    pyshacl: did not finish within {timeout:.0f} s (killed)")
            shutil.rmtree(tmp, ignore_errors=True)
            return timeout
        conforms, n, secs = queue.get()
        print(f"    pyshacl: {secs:.2f} s conforms={conforms} violations={n}")
        return secs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=1_100_000)
    parser.add_argument("--rounds", type=int, default=3, help="rebuild rounds")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--repeat", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3, help="validate --all runs")
    parser.add_argument("--skip-pyshacl", action="store_true",
                        help="take pySHACL's time as --timeout without running it")
    parser.add_argument("--only", choices=["commit", "rebuild", "validate"])
    args = parser.parse_args()
    if args.only in (None, "commit"):
        commit_check(args.repeat)
    if args.only == "commit":
        return
    print(f"building (or reusing) a home of >= {args.triples:,} triples ...", file=sys.stderr)
    home = build_home(args.triples)
    if args.only in (None, "rebuild"):
        rebuild_throughput(home, args.rounds)
    if args.only not in (None, "validate"):
        return
    ours = validate_all(home, args.runs)
    if args.skip_pyshacl:
        theirs = args.timeout
        print(f"    pyshacl: not run, taken as {theirs:.0f} s")
    else:
        theirs = pyshacl_all(home, args.timeout)
    print(f"    -> {theirs / ours:.0f}x faster than pySHACL "
          f"(target >= 50x: {'met' if theirs / ours >= 50 else 'NOT met'})")


if __name__ == "__main__":
    main()
