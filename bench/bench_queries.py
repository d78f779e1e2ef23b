"""Does a named query cost more in a bigger home? One growth row per named query.

Homes of 1 k / 10 k / 100 k events (``--million`` adds 1 M) are filled by the runtime
itself (:func:`synthetic.build_events_home`, cached); each is projected into a fresh
on-disk store in a temp folder (``OxigraphStore.rebuild``), and every built-in named query
is run on it the way ``cradle-kg query NAME --param ...`` runs it once the store is open:
parameters bound as RDF terms, every row read. A query with a parameter is asked about
objects taken from the journal (the *last* decision, action, approval, run...), so a
point query is a point query at every size. Each figure is the p50 of ``--rounds`` calls
(after warm-up), wall-clock, and the min and p50 CPU time of the calling thread
(pyoxigraph evaluates on it: ``time.thread_time``, so a RocksDB compaction running in the
background after the store was built does not count), with the ratio of the CPU minima
to the 1 k figure, the rows it returned and the CPU per row; listing
queries return more rows in a bigger home, so their row count and its growth are printed
beside them: a listing query that costs what it returns grows like its rows.

``--big`` adds ``policy-in-force`` over 300 decisions of the 1.1 M-quad store that
``bench_graph.py`` and ``bench_sparql.py`` use (p50 and p99). ``--against REV`` also runs
each query's text as it was at git revision ``REV`` on the same store, interleaved with
today's round by round (an A/B that the machine's load affects alike).

Run: ``.venv/bin/python bench/bench_queries.py [--sizes 1000,10000,100000] [--million]
[--rounds 20] [--against REV] [--big] [--optimize]``; ``--optimize`` compacts each store
after its rebuild (a store freshly rebuilt still holds the tombstones of retracted quads,
which index scans step over). Prints figures and the load average; asserts nothing.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import build_events_home

from cradle_kg.graph.catchup import rebuild
from cradle_kg.graph.queries import QueryCatalog, bind, execute
from cradle_kg.home import Home
from cradle_kg.records import AuditEvent
from cradle_kg.storage import SqliteJournal as Journal
from cradle_kg.storage.oxigraph import OxigraphStore


def _params(events: list[AuditEvent]) -> dict[str, dict[str, str]]:
    """A value for each parameterized query, taken from the last events of the journal."""
    last: dict[str, AuditEvent] = {}
    for ev in events:
        last[ev.kind] = ev
    decided = last["decision.made"].payload["decision"]
    intent = last["action.intent"].payload
    approval = last["approval.decided"].payload
    fact_owner = next((ev for ev in reversed(events) if ev.kind == "proposal.received"
                       and ev.payload["proposal"].get("facts")), None)
    out = {
        "why-allowed": {"action": intent["action"]["id"]},
        "policy-in-force": {"decision": decided["id"]},
        "decisions-by-policy-version": {"policyVersion": decided["policy_version"]},
        "run-graph": {"run": last["action.intent"].run_id},
        "run-timeline": {"run": last["action.intent"].run_id},
        "task-effects": {"task": last["proposal.received"].payload["proposal"]["task_id"]},
        "identity-activity": {"identity": approval["approver_id"]},
        "approvals": {"approver": approval["approver_id"]},
        "unverified-actions": {},
        "stale-approvals": {"at": "2030-01-01T00:00:00Z"},
    }
    if fact_owner is not None:
        prop = fact_owner.payload["proposal"]
        out["evidence-chain"] = {"fact": f"{fact_owner.run_id}/{prop['id']}/0"}
    return out


def old_text(rev: str, name: str) -> str | None:
    done = subprocess.run(["git", "show", f"{rev}:queries/{name}.rq"], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parents[1], check=False)
    return done.stdout if done.returncode == 0 else None


def measure(home: Path, rounds: int, against: str | None = None, *, optimize: bool = False
            ) -> tuple[int, dict[str, tuple[float, float, float, int]]]:
    catalog = QueryCatalog.load()
    with Journal(Home(home).journal) as journal:
        events = list(journal.events())
        folder = Path(tempfile.mkdtemp(prefix="bench-queries-"))
        store = OxigraphStore(folder / "graph")
        rebuild(store, journal)
    if optimize:  # compacted: the retracted quads' tombstones and the L0 files are gone
        store.store.optimize()
    params = _params(events)
    out: dict[str, tuple[float, float, float, int]] = {}
    try:
        for name in catalog.names():
            query = catalog.get(name)
            if any(p.required and p.name not in params.get(name, {}) for p in query.params):
                continue
            bound = bind(query, params.get(name, {}))
            old = old_text(against, name) if against else None
            texts = {"new": query.text, **({"old": old} if old and old != query.text else {})}
            times: dict[str, list[float]] = {k: [] for k in texts}
            cpu: dict[str, list[float]] = {k: [] for k in texts}
            found: dict[str, int] = {}
            for k, text in texts.items():  # warm-up
                found[k] = len(list(execute(store, text, bound=bound)))
            for _ in range(rounds):
                for k, text in texts.items():
                    t0, c0 = time.perf_counter(), time.thread_time()
                    found[k] = len(list(execute(store, text, bound=bound)))
                    cpu[k].append(time.thread_time() - c0)
                    times[k].append(time.perf_counter() - t0)
            out[name] = (statistics.median(times["new"]), min(cpu["new"]),
                         statistics.median(cpu["new"]), found["new"])
            if "old" in times:
                out[f"{name} @{against}"] = (statistics.median(times["old"]), min(cpu["old"]),
                                             statistics.median(cpu["old"]), found["old"])
        return len(store.store), out
    finally:
        store.close()
        import shutil
        shutil.rmtree(folder, ignore_errors=True)


def big_store() -> None:
    """policy-in-force on the cached 1.1 M-quad home, over 300 of its decisions."""
    from synthetic import build_home

    store = OxigraphStore(build_home(1_100_000) / "graph")
    try:
        query = QueryCatalog.load().get("policy-in-force")
        decisions = [r["d"].value for r in store.query(
            "SELECT ?d WHERE { ?d a <https://w3id.org/cradle#Decision> }")]
        times = []
        for decision in decisions[::max(1, len(decisions) // 300)]:
            t0 = time.perf_counter()
            rows = list(execute(store, query.text, bound=bind(query, {"decision": decision})))
            times.append(time.perf_counter() - t0)
            assert len(rows) == 1, decision
        ordered = sorted(times)
        print(f"policy-in-force on {len(store.store):,} quads ({len(store.run_graphs()):,} runs), "
              f"{len(times)} decisions: p50 {statistics.median(times) * 1e3:.2f} ms, "
              f"p99 {ordered[int(0.99 * len(ordered))] * 1e3:.2f} ms "
              f"(load {os.getloadavg()[0]:.1f})")
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--million", action="store_true", help="add a 1 M-event home")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--against", help="also run the texts of this git revision")
    parser.add_argument("--big", action="store_true", help="policy-in-force at 1.1 M quads")
    parser.add_argument("--optimize", action="store_true",
                        help="compact each store after its rebuild (Store.optimize)")
    args = parser.parse_args()
    if args.big:
        big_store()
    sizes = [int(s) for s in args.sizes.split(",") if s] + ([1_000_000] if args.million else [])
    results: dict[int, tuple[int, dict[str, tuple[float, float, float, int]]]] = {}
    for size in sizes:
        home = build_events_home(size)
        results[size] = measure(home, args.rounds, args.against, optimize=args.optimize)
        print(f"{size:>9,} events: {results[size][0]:,} quads (load {os.getloadavg()[0]:.1f})",
              flush=True)
    names = sorted({n for _, r in results.values() for n in r})
    print("p50 wall-clock / min / p50 CPU time of the calling thread (the engine runs on "
          "it; CPU is what a query costs whatever the machine's load); ratios of CPU minima")
    head = "| query | " + " | ".join(f"{s:,} events" for s in sizes) + \
        " | CPU last/first | rows last/first | CPU per row first / last |"
    print(head)
    print("|---" * (len(sizes) + 4) + "|")
    for name in names:
        cells: list[str] = []
        first: tuple[float, int] | None = None
        final: tuple[float, int] | None = None
        for size in sizes:
            got = results[size][1].get(name)
            if got is None:
                cells.append("-")
                continue
            p50, cpu_min, cpu50, rows = got
            first = (cpu_min, rows) if first is None else first
            final = (cpu_min, rows)
            cells.append(f"{p50 * 1e3:.2f} / {cpu_min * 1e3:.2f} / {cpu50 * 1e3:.2f} ms "
                         f"({rows} rows)")
        ratio = f"{final[0] / first[0]:.2f}x" if first and final and first[0] else "-"
        grown = f"{final[1] / first[1]:.0f}x" if first and final and first[1] else "-"
        per_row = (f"{first[0] / first[1] * 1e6:.0f} / {final[0] / final[1] * 1e6:.0f} µs"
                   if first and final and first[1] and final[1] else "-")
        print(f"| {name} | " + " | ".join(cells) + f" | {ratio} | {grown} | {per_row} |")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
