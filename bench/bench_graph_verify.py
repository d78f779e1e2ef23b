"""``graph verify``'s cost against ``graph rebuild``'s on the same home, in one process.

``graph verify`` projects the journal (up to the store's watermark) into a scratch store
and compares every named graph with the home's store: it costs one rebuild's projection
plus a scan of both stores. The baseline is what ``graph rebuild`` does to the embedded
store (:func:`rebuild_folder`: the projection, the packs' knowledge graphs, RocksDB's
compaction and the swap), into a folder of its own. Rounds alternate (verify, rebuild);
prints wall-clock and CPU time (every thread) of each, their ratio, and the process's
peak RSS after the first verify (before any rebuild ran: what the verify holds).

Run: ``.venv/bin/python bench/bench_graph_verify.py [--triples 1100000] [--rounds 3]``.
The home is :func:`synthetic.build_home`'s (cached in bench/out/). Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import build_home

from cradle_kg.graph.catchup import rebuild
from cradle_kg.graph.verify import verify_graph
from cradle_kg.storage import SqliteJournal as Journal
from cradle_kg.storage.oxigraph import OxigraphStore, rebuild_folder


def timed(work: object) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    assert callable(work)
    work()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=1_100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    home = build_home(args.triples)
    journal = Journal(home / "journal.sqlite", read_only=True)
    store = OxigraphStore(home / "graph", read_only=True)
    quads = len(store.store)
    events = journal.head()[0]
    verify: list[tuple[float, float]] = []
    base: list[tuple[float, float]] = []
    peak_after_verify = 0

    def one_verify() -> None:
        report = verify_graph(store, journal)
        assert report.equal, report.to_dict()

    for i in range(args.rounds):
        verify.append(timed(one_verify))
        if i == 0:
            peak_after_verify = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
            base.append(timed(lambda t=tmp: rebuild_folder(  # type: ignore[misc]
                Path(t) / "graph", lambda s: rebuild(s, journal))))
    store.close()
    journal.close()
    med = statistics.median
    for name, i in (("wall", 0), ("CPU", 1)):
        ours, theirs = [v[i] for v in verify], [b[i] for b in base]
        print(f"{name}: graph verify min {min(ours):.1f} s / median {med(ours):.1f} s; graph "
              f"rebuild min {min(theirs):.1f} s / median {med(theirs):.1f} s -> verify/rebuild"
              f" {med(ours) / med(theirs):.2f}x (medians), {min(ours) / min(theirs):.2f}x "
              f"(best to best); per round verify {', '.join(f'{v:.1f}' for v in ours)}, "
              f"rebuild {', '.join(f'{v:.1f}' for v in theirs)}")
    print(f"home: {events:,} events, {quads:,} quads; peak RSS after the first verify "
          f"{peak_after_verify / 1024:.0f} MiB; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
