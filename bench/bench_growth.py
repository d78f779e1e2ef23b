"""Does a call cost more in a bigger home? Per-call figures at 1 k / 10 k / 100 k events.

Homes are filled by the runtime itself with :mod:`synthetic`'s mix (credits, denials, a
lying tool, approvals, replays; cached under ``bench/out/``); each size is measured on a
fresh copy, in one process, with the same configuration:

* **submit** p50 / p99: a credit through the whole loop (gates, journal, gateway, gate 2,
  the commit-time integrity check; graph sync off — the home has no graph store), with
  the demo's identities and no limit; **submit + limits**: the same with an agent and a
  global rate limit whose window (a day) holds every intent of the home — the worst case
  for a window that would be counted by scanning;
* **decide_approval**, the resumed run included (a close_account approved by the second
  identity);
* **Runtime open** (the recovery pass at open included) and **recover** on an open runtime;
* **runs list**: one page of 50 runs, newest first, as the CLI builds it; with the count
  of runs per state the table prints; filtered by a state (``--status completed``); and
  the baseline those replaced — the states counted by folding every run's events;
* **open tasks**, the whole **inbox** (what ``/api/inbox`` returns) and a run's **repair
  count** (what each repair reads);
* **audit verify**: in a subprocess, its time and peak RSS.

Each figure is printed with its ratio to the 1 k figure of the same run and journal
(target: submit, decide_approval, open and recover <= 1.2x; a limit <= 1.1x a submit
without). Run:
``.venv/bin/python bench/bench_growth.py [--sizes 1000,10000,100000] [--million]
[--journal sqlite|postgresql|both]``.

``--journal postgresql`` measures the same homes on a PostgreSQL journal: a throw-away
server (:mod:`cradle_kg.storage.pg_scratch`) is started in this process, each size's
SQLite journal is moved into a template database once with ``journal copy``'s code
(row for row, verified on arrival), and every round measures a fresh copy of that
template (``CREATE DATABASE … TEMPLATE``) through ``CRADLE_JOURNAL_URL``; ``both``
measures the two journals interleaved and prints PostgreSQL / SQLite ratios per size.
Homes up to 100 k events are filled by the runtime itself (about 2 minutes for 100 k at
~850 events/s, 2 shared cores; 3-8 minutes at load 3-10). ``--million`` adds a 1 M-event
home made by :mod:`replicate`: the 100 k home's real events appended again through the
journal's own ``append`` with new run ids, subjects, claims and approval ids per copy
(chain, claims and derived state are the journal's work; ``audit verify`` checks the
result, every round) — about 2,000 events/s, 7-8 minutes, where the runtime filler ran
at 200-300 events/s at load 7-10 (201,601 events in 956 s, about an hour for 1 M).
Moving the 1 M journal into PostgreSQL (``journal copy``'s bulk path: ``COPY`` in
batches, derived tables set-wise, verified before it commits) takes about 3 minutes
more. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from replicate import build_replicated_home
from synthetic import build_events_home, proposal

from cradle_kg import Runtime
from cradle_kg.config import Limit, RuntimeConfig
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, demo_config
from cradle_kg.inbox import inbox
from cradle_kg.loop.escalation import open_tasks, repairs_in_run
from cradle_kg.records import ApprovalStatus
from cradle_kg.runs import RunState, list_page, show_run, state_counts
from cradle_kg.storage import JOURNAL_URL_ENV, Journal, open_journal
from cradle_kg.storage.pg_admin import copy_sqlite
from cradle_kg.storage.pg_scratch import ScratchPostgres

VERIFY = """
import resource, sys, time
from pathlib import Path
from cradle_kg.storage import verify_target
seen = []
t0 = time.perf_counter()
report = verify_target(sys.argv[1], progress=lambda done, total: seen.append(done))
took = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(report.intact, report.events, took, rss, len(seen))
"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(fn: Callable[[], object], n: int, *, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _config(limited: bool) -> RuntimeConfig:
    limits = (Limit(scope="agent", window_seconds=86_400, max_calls=10**9),
              Limit(scope="global", window_seconds=86_400, max_calls=10**9, max_cost=1e12)) \
        if limited else ()
    return demo_config().model_copy(update={"limits": limits})


def measure(home: Path, *, calls: int, fold: bool = True) -> dict[str, float]:
    figures: dict[str, float] = {}
    counter = iter(range(10**9))

    def credit(rt: Runtime) -> None:
        i = next(counter)
        out = rt.submit(proposal(10**7 + i, "demo.ledger.credit",
                                  {"account": f"g-{i % 50}", "amount": 1}))
        assert out.ok, out.reasons

    plain: list[float] = []
    limited: list[float] = []
    rts = {flag: Runtime(home, config=_config(flag), graph_sync=False) for flag in (False, True)}
    try:
        for _ in range(4):  # interleaved: noise on the shared machine hits both alike
            plain += timed(lambda: credit(rts[False]), calls // 4)
            limited += timed(lambda: credit(rts[True]), calls // 4)
        rt = rts[False]
        figures["submit p50"], figures["submit p99"] = pct(plain, .5), pct(plain, .99)
        figures["submit + limits p50"] = pct(limited, .5)

        def approve() -> None:
            i = next(counter)
            waiting = rt.submit(proposal(10**7 + i, "demo.ledger.close_account",
                                          {"account": f"g-closed-{i}"}))
            assert waiting.approval is not None
            t0 = time.perf_counter()
            _, resumed = rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                                            token=DEMO_TOKENS[APPROVER],
                                            status=ApprovalStatus.APPROVED)
            decided.append(time.perf_counter() - t0)
            assert resumed is not None and resumed.ok, resumed

        decided: list[float] = []
        timed(approve, 20, warmup=2)
        figures["decide_approval p50"] = pct(decided, .5)
        figures["recover p50"] = pct(timed(rt.recover, 20), .5)
        figures["runs list (50) p50"] = pct(timed(
            lambda: list_page(rt.journal, limit=50, newest_first=True), 10), .5)
        # what `runs list` prints in a table: the page and the count of runs per state
        figures["runs list + states p50"] = pct(timed(
            lambda: (list_page(rt.journal, limit=50, newest_first=True),
                     state_counts(rt.journal)), 10), .5)
        figures["runs list --status p50"] = pct(timed(
            lambda: list_page(rt.journal, limit=50, newest_first=True,
                              state=RunState.COMPLETED), 10), .5)
        # what waits for a person: the open human tasks (the derived ``human_tasks``, not
        # every task event of the journal), the whole inbox as ``/api/inbox`` builds it
        # (its human steps are still folded: issue 17), and a run's repair count
        figures["open tasks p50"] = pct(timed(lambda: open_tasks(rt.journal), 10), .5)
        figures["inbox p50"] = pct(timed(lambda: inbox(rt), 10), .5)
        newest = list_page(rt.journal, limit=1, newest_first=True)[0][0].run_id
        figures["repairs in run p50"] = pct(timed(
            lambda: repairs_in_run(rt.journal, newest), 20), .5)
        # the baseline: the states counted by folding every run's events (before run_state)
        if fold:  # seconds at 100 k events, minutes at 1 M: not measured there
            figures["states folded (old) p50"] = pct(timed(
                lambda: _folded_counts(rt.journal), 2, warmup=0), .5)
    finally:
        for each in rts.values():
            each.close()
    figures["Runtime open p50"] = pct(timed(
        lambda: Runtime(home, config=_config(False), graph_sync=False).close(), 10), .5)
    return figures


def _folded_counts(journal: Journal) -> Counter[str]:
    listed, _ = journal.listed_runs()
    return Counter(show_run(journal, r)[0].state.value for r in listed)


def verify_figures(target: str, runs: int = 3) -> dict[str, float]:
    took, rss, ticks = [], [], 0
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", VERIFY, target],
                              capture_output=True, text=True, check=True)
        intact, _events, t, r, n = done.stdout.split()
        assert intact == "True", done.stdout
        took.append(float(t))
        rss.append(float(r) / 1024)
        ticks = int(n)
    return {"audit verify s (median)": statistics.median(took),
            "audit verify peak RSS MB": max(rss), "verify progress reports": float(ticks)}


def _cell(values: list[float], base: float, unit: float) -> str:
    low = min(values)
    shown = f"{low * unit:.2f}/{statistics.median(values) * unit:.2f}"
    return f"{shown}{'' if unit == 1 else ' ms'} {low / base if base else float('nan'):5.2f}x"


class PostgresHomes:
    """Each size's journal in a template database of one throw-away server; a fresh copy
    of the template per measurement."""

    def __init__(self) -> None:
        self.server = ScratchPostgres()
        self.templates: dict[int, str] = {}

    def load(self, size: int, source: Path) -> None:
        url = self.server.create_database()
        t0 = time.perf_counter()
        last = [0.0]

        def show(phase: str, done: int, total: int) -> None:
            if time.perf_counter() - last[0] > 10 or done == total:
                last[0] = time.perf_counter()
                print(f"    {phase}: {done:,} / {total:,} at {last[0] - t0:.0f} s",
                      file=sys.stderr)

        report = copy_sqlite(source / "journal.sqlite", url, progress=show)
        print(f"  {size:,}: {report.events:,} events copied into PostgreSQL and verified "
              f"in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        self.templates[size] = url.rsplit("/", 1)[1]

    def fresh(self, size: int) -> str:
        return self.server.create_database(template=self.templates[size])

    def stop(self) -> None:
        self.server.stop()


def measure_once(source: Path, journal: str, size: int, pg: PostgresHomes | None,
                 calls: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(dir=source.parent) as tmp:
        home = Path(tmp) / "home"
        url = None
        if journal == "postgresql":
            assert pg is not None
            url = pg.fresh(size)
            shutil.copytree(source, home, ignore=shutil.ignore_patterns("journal.sqlite*"))
            os.environ[JOURNAL_URL_ENV] = url
        else:
            shutil.copytree(source, home)
            os.environ.pop(JOURNAL_URL_ENV, None)
        # the copy is in the page cache, not yet on disk: written back during the
        # measure, it made every fsync behind it wait (seconds at 1 M events, 3 GB)
        os.sync()
        target = url or str(home / "journal.sqlite")
        try:
            with open_journal(target) as j:
                events = float(j.head()[0])
            return {**measure(home, calls=calls, fold=size <= 100_000),
                    **verify_figures(target, runs=1),
                    "events": events}
        finally:
            os.environ.pop(JOURNAL_URL_ENV, None)
            if url is not None and pg is not None:
                pg.server.drop_database(url)


def print_table(journal: str, sizes: list[int], rounds: dict[int, list[dict[str, float]]],
                n_rounds: int) -> None:
    names = [k for k in rounds[sizes[0]][0] if k != "events"]
    names += [k for k in rounds[sizes[-1]][0] if k not in names and k != "events"]
    print(f"\n{journal} journal — min/median of {n_rounds} rounds; "
          f"ratio = min / min at {sizes[0]:,} events")
    print(f"{'measure':26}" + "".join(f"{s:>26,}" for s in sizes))
    print(f"{'events in the journal':26}"
          + "".join(f"{int(rounds[s][0]['events']):>26,}" for s in sizes))
    for name in names:
        unit = 1.0 if ("MB" in name or " s " in name or "reports" in name) else 1000.0
        base = min(r.get(name, float("nan")) for r in rounds[sizes[0]])
        print(f"{name:26}" + "".join(
            f"{_cell([r[name] for r in rounds[s]], base, unit):>26}" if name in rounds[s][0]
            else f"{'(not measured)':>26}" for s in sizes))
    for s in sizes:
        ratios = [r["submit + limits p50"] / r["submit p50"] for r in rounds[s]]
        print(f"rate limit cost at {s:,} events (submit + limits / submit, p50): "
              f"min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--million", action="store_true", help="add a 1 M-event home")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds over every size, interleaved (min and median shown)")
    parser.add_argument("--journal", choices=("sqlite", "postgresql", "both"),
                        default="sqlite")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] + ([1_000_000] if args.million else [])
    journals = ["sqlite", "postgresql"] if args.journal == "both" else [args.journal]
    sources = {size: build_events_home(size) if size <= 100_000 else
               build_replicated_home(size) for size in sizes}
    pg = PostgresHomes() if "postgresql" in journals else None
    try:
        if pg is not None:
            for size in sizes:
                pg.load(size, sources[size])
        results: dict[str, dict[int, list[dict[str, float]]]] = {
            j: {size: [] for size in sizes} for j in journals}
        for round_ in range(args.rounds):
            # interleaved: a burst of load on this shared machine hits every size alike
            for size in sizes:
                for journal in journals:
                    print(f"round {round_ + 1}: measuring {size} events on {journal} ...",
                          file=sys.stderr)
                    results[journal][size].append(
                        measure_once(sources[size], journal, size, pg, args.calls))
    finally:
        if pg is not None:
            pg.stop()
    for journal in journals:
        print_table(journal, sizes, results[journal], args.rounds)
    if len(journals) == 2:
        print("\npostgresql / sqlite, min over rounds, same process")
        names = [k for k in results["sqlite"][sizes[0]][0] if k != "events"]
        print(f"{'measure':26}" + "".join(f"{s:>12,}" for s in sizes))
        def low(journal: str, size: int, name: str) -> float:
            return min(r.get(name, float("nan")) for r in results[journal][size])

        for name in names:
            print(f"{name:26}" + "".join(
                f"{low('postgresql', s, name) / low('sqlite', s, name):>11.2f}x"
                for s in sizes))
    print(json.dumps({j: {str(s): results[j][s] for s in sizes} for j in journals}),
          file=sys.stderr)


if __name__ == "__main__":
    main()
