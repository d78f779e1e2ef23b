"""Governed-call throughput with 1, 2 and 4 workers on one PostgreSQL journal, side by side.

Each worker is a process with its own :class:`~cradle_kg.Runtime` on the same home and the
same PostgreSQL journal (a throw-away server, the machine's binaries; ``--journal URL`` for
an existing one), as ``cradle-kg worker`` runs them. After a warm-up the workers start
together (a barrier) and each submits ``--calls`` governed writes (``demo.ledger.credit``:
gate 1, Cedar, the intent, the call, gate 2's verifier, the integrity check, the commit),
without bringing the home's graph store up after each call — as ``cradle-kg worker`` runs
by default: the graph is one projector's job (``cradle-kg graph sync``), not every
worker's (``--graph-sync`` measures that shape too).
Throughput is all calls over the wall time from the barrier to the last worker done; each
row's ratio is against the 1-worker row measured in the same run. The load average is
printed before and after: this machine's 2 cores are shared.

``--follow`` also runs one ``cradle-kg graph follow`` process per round (a subprocess, as
production would) and prints its lag behind the journal while the workers run — p50 / p99
/ max over samples every ~50 ms of the seconds the oldest unprojected event has waited —
and how long it takes to catch up once they stop (:mod:`follow_lag`). It follows the
home's embedded on-disk store; ``--follow-graph oxigraph-serve`` a throw-away
``oxigraph serve``. Throughput with ``--follow`` is measured with the follower running.
The follower runs in a session of its own, as a service would (and as each worker does);
with autogroup scheduling that session is one CPU share among the others'. Besides its
CPU per event the bench prints how long its threads waited runnable for a CPU per event
(``wait``, from the scheduler's ``schedstat``): a follower that waits longer than it runs
is starved of CPU. ``--follow-nice N`` gives the follower's session the autogroup nice
``N`` (below 0: a bigger CPU share, as a deployment would give its projector a CPU weight
— systemd's ``CPUWeight=``, compose's ``cpu_shares``; needs root).

``--waits`` samples the journal's backends every ~5 ms while the workers run and prints
how many, on average, wait for a lock (the append lock), sit idle in a transaction (an
open transaction waiting for its client) or run: where 4 workers lose their time.

Run: ``.venv/bin/python bench/bench_workers.py [--calls 200] [--workers 1,2,4] [--rounds 3]
[--waits] [--follow [--follow-graph embedded|oxigraph-serve] [--follow-interval 0.5]
[--follow-nice N]]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from follow_lag import Follower, Sampler, embedded_projected, lag_figures, wait_caught_up

from cradle_kg import Runtime
from cradle_kg.config import save_config
from cradle_kg.demo.scenario import AGENT, demo_config, prepare_home
from cradle_kg.storage import JOURNAL_URL_ENV, open_journal

#: what each client backend of the journal's database is doing, sampled by ``--waits``
_ACTIVITY_SQL = ("SELECT state, wait_event_type, wait_event FROM pg_stat_activity "
                 "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() "
                 "AND datname = current_database()")


class WaitSampler:
    """``--waits``: every ~5 ms, how many of the journal's backends wait for a lock (the
    append lock: an advisory lock), sit ``idle in transaction`` (a transaction open —
    the append lock held, in a two-round-trip append — while the server waits for its
    client) or run; averaged over the samples taken while the workers run. A thread with
    a connection of its own, started after the workers are forked and stopped before the
    next round forks."""

    KEYS = ("lock_wait", "idle_in_transaction", "active")

    def __init__(self, url: str) -> None:
        import threading

        import psycopg

        self._conn = psycopg.connect(url, autocommit=True)
        self._stop = threading.Event()
        self.samples = 0
        self.sums = dict.fromkeys(self.KEYS, 0)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            rows = self._conn.execute(_ACTIVITY_SQL).fetchall()
            self.samples += 1
            for state, wait_type, _event in rows:
                if wait_type == "Lock":
                    self.sums["lock_wait"] += 1
                elif state == "idle in transaction":
                    self.sums["idle_in_transaction"] += 1
                elif state == "active":
                    self.sums["active"] += 1

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self._conn.close()
        return {f"backends_{k}": round(v / max(self.samples, 1), 2)
                for k, v in self.sums.items()}


#: the governed call: a write (the ledger's durable commit, read back by the verifier) or a
#: read (no ledger write): ``--tool``
TOOLS = {"credit": ("demo.ledger.credit", {"amount": 1}), "balance": ("demo.ledger.balance", {})}
TOOL = "credit"


def _proposal(worker: int, i: int, tag: str) -> dict[str, Any]:
    tool, extra = TOOLS[TOOL]
    # a step per call: each call its own idempotency key (one key for all would make every
    # call after the first a replay of the record — tests/security/test_85)
    return {"id": f"{tag}-w{worker}-{i}", "task_id": f"task-{tag}-{worker}", "agent_id": AGENT,
            "step": i,
            "action": {"action_type": tool, "target": f"ledger:acct-{worker}",
                       "arguments": {"account": f"acct-{worker}", **extra}}}


def _worker(home: Path, worker: int, calls: int, tag: str, barrier: Any, out: Any,
            graph_sync: bool, own_session: bool) -> None:
    if own_session:
        # as separate services would (a systemd unit, a container): with the kernel's
        # autogroup scheduling a session's processes share one CPU share
        os.setsid()
    rt = Runtime(home, graph_sync=graph_sync)
    try:
        for i in range(3):  # warm-up: imports, caches, the policy set activation
            rt.submit(_proposal(worker, i, tag + "-warm"))
        barrier.wait()
        start, cpu = time.perf_counter(), time.process_time()
        # executed, and not answered from the record: every call a governed write
        executed = sum(done.status.value == "executed" and not done.replayed
                       for done in (rt.submit(_proposal(worker, i, tag)) for i in range(calls)))
        out.put((worker, start, time.perf_counter(), executed, time.process_time() - cpu))
    finally:
        rt.close()


def measure(home: Path, n: int, calls: int, tag: str, *, graph_sync: bool = False,
            server: Any = None, own_session: bool = True,
            follow: Follower | None = None, journal_url: str = "",
            remote_store: Any = None, waits: bool = False) -> dict[str, float]:
    ctx = multiprocessing.get_context("fork")  # the parent holds no connection, no thread
    # following: the bench is a party of the barrier, released once the follower is up and
    # at the head (the workers' warm-up projected)
    barrier, out = ctx.Barrier(n + (follow is not None)), ctx.Queue()
    server_cpu = server.cpu_seconds() if server is not None else 0.0
    procs = [ctx.Process(target=_worker, args=(home, w, calls, tag, barrier, out, graph_sync,
                                                  own_session))
             for w in range(n)]
    for p in procs:
        p.start()
    sampler = None
    if follow is not None:  # after the fork: the workers inherit no thread, no connection
        sampler = _start_following(home, n, barrier, follow, journal_url, remote_store)
    activity = WaitSampler(journal_url) if waits else None  # after the fork too
    try:
        results = [out.get(timeout=900) for _ in procs]
        busy = activity.stop() if activity is not None else {}
        activity = None
        lag: dict[str, float] = {}
        if sampler is not None and follow is not None:
            start, end = min(r[1] for r in results), max(r[2] for r in results)
            lag = lag_figures(sampler, start, end, wait_caught_up(sampler, follow, after=end))
    finally:
        if activity is not None:
            activity.stop()
        if sampler is not None:
            sampler.stop()
        if follow is not None:
            follow.stop()
    if follow is not None:
        lag.update(follow.figures())
    for p in procs:
        p.join(60)
        if p.exitcode != 0:
            raise RuntimeError(f"a worker failed (exit {p.exitcode})")
    wall = max(r[2] for r in results) - min(r[1] for r in results)
    executed = sum(r[3] for r in results)
    if executed != n * calls:
        raise RuntimeError(f"{n * calls - executed} calls were not executed")
    return {"workers": n, "calls": executed, "seconds": round(wall, 2),
            "calls_per_second": round(executed / wall, 1),
            # the workers' own CPU per call: what one core can do at best is 1000 / this
            "worker_cpu_ms_per_call": round(1000 * sum(r[4] for r in results) / executed, 1),
            # the server's CPU (its ended backends, warm-up included) per measured call
            "server_cpu_ms_per_call": round(1000 * (server.cpu_seconds() - server_cpu)
                                            / executed, 1) if server is not None else -1,
            **busy, **lag}


def _start_following(home: Path, n: int, barrier: Any, follow: Follower, journal_url: str,
                     remote_store: Any) -> Sampler:
    follow.start(remote_store.projected_seq() if remote_store is not None
                 else embedded_projected(home))
    sampler = Sampler(journal_url, follow, remote_store)
    sampler.start()
    deadline = time.monotonic() + 300
    while barrier.n_waiting < n:  # the workers' warm-up done
        if time.monotonic() > deadline:
            raise RuntimeError("the workers did not reach the barrier")
        time.sleep(0.02)
    wait_caught_up(sampler, follow, after=time.perf_counter())
    follow.mark()
    barrier.wait()
    return sampler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="governed calls per worker")
    parser.add_argument("--workers", default="1,2,4", help="worker counts, side by side")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (best of, per count)")
    parser.add_argument("--journal", default=None, help="a migrated PostgreSQL journal")
    parser.add_argument("--graph-sync", action="store_true",
                        help="each worker also brings the home's graph up to the journal "
                             "after each call (one of them holds the store and projects "
                             "every worker's events)")
    parser.add_argument("--same-session", action="store_true",
                        help="keep the workers in this shell's session (with autogroup "
                             "scheduling they then share one CPU share, as one process would)")
    parser.add_argument("--tool", choices=sorted(TOOLS), default="credit",
                        help="a governed write (default) or read")
    parser.add_argument("--follow", action="store_true",
                        help="run one `cradle-kg graph follow` per round and measure its "
                             "lag behind the journal")
    parser.add_argument("--follow-graph", choices=("embedded", "oxigraph-serve"),
                        default="embedded", help="the store it follows into")
    parser.add_argument("--follow-interval", type=float, default=0.5,
                        help="the follower's --interval (its default: 0.5 s)")
    parser.add_argument("--follow-batch", type=int, default=5000,
                        help="the follower's --batch (its default: 5000)")
    parser.add_argument("--follow-nice", type=int, default=None,
                        help="the autogroup nice of the follower's session (-20..19; below "
                             "0, a bigger CPU share, needs root); default: left alone")
    parser.add_argument("--waits", action="store_true",
                        help="sample the journal's backends every ~5 ms while the workers "
                             "run: how many wait for a lock (the append lock), sit idle in "
                             "a transaction, run (the samples cost the server some CPU)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--durable", action="store_true",
                        help="the throw-away server flushes its WAL to disk (fsync=on, as "
                             "deployed); by default it does not (fsync=off, as the tests')")
    args = parser.parse_args()
    global TOOL
    TOOL = args.tool  # the workers are forked: they see it
    counts = [int(x) for x in args.workers.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="cradle-bench-workers-"))
    server = None
    oxigraph: Any = None
    remote_store: Any = None
    load_before = os.getloadavg()
    try:
        if args.journal is None:
            from cradle_kg.storage.pg_scratch import ScratchPostgres

            server = ScratchPostgres(durable=args.durable)
            args.journal = server.journal_schema()
        os.environ[JOURNAL_URL_ENV] = args.journal
        home = tmp / "home"
        prepare_home(home)
        save_config(home / "config.json", demo_config().model_copy(update={"limits": ()}))
        if args.follow and args.follow_graph == "oxigraph-serve":
            from cradle_kg.storage.graph_opening import open_graph_store
            from cradle_kg.storage.sparql_scratch import ScratchOxigraph

            oxigraph = ScratchOxigraph()
            remote_store = open_graph_store(home, remote=oxigraph.endpoints())
        best: dict[int, dict[str, float]] = {}
        lags: dict[int, list[dict[str, float]]] = {n: [] for n in counts}
        for r in range(args.rounds):  # interleaved, so a load spike hits every count
            for n in counts:
                follow = Follower(home, args.follow_interval, args.follow_batch,
                                  oxigraph.setting() if oxigraph is not None else None,
                                  server_pid=oxigraph._proc.pid if oxigraph is not None
                                  else None, nice=args.follow_nice) if args.follow else None
                row = measure(home, n, args.calls, f"r{r}n{n}", graph_sync=args.graph_sync,
                              server=server, own_session=not args.same_session,
                              follow=follow, journal_url=args.journal,
                              remote_store=remote_store, waits=args.waits)
                if args.follow:
                    lags[n].append({"workers": n, "round": r, **{
                        k: v for k, v in row.items()
                        if k.startswith(("lag_", "catch_up", "follower_"))}})
                if n not in best or row["calls_per_second"] > best[n]["calls_per_second"]:
                    best[n] = row
        with open_journal(args.journal) as journal:
            report = journal.verify()
        if not report.intact:
            raise RuntimeError(f"the journal does not verify: {report.reason}")
    finally:
        if remote_store is not None:
            remote_store.close()
        if oxigraph is not None:
            oxigraph.stop()
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    base = best[counts[0]]["calls_per_second"]
    rows = [{**best[n], "ratio_to_1": round(best[n]["calls_per_second"] / base, 2)}
            for n in counts]
    figures = {"rows": rows, "tool": TOOLS[TOOL][0], "graph_sync": args.graph_sync,
               "own_sessions": not args.same_session,
               "journal_events": report.events,
               "chain_intact": report.intact,
               "load_before": [round(x, 1) for x in load_before],
               "load_after": [round(x, 1) for x in os.getloadavg()], "cpus": os.cpu_count()}
    if args.follow:
        figures["follow"] = {"graph": args.follow_graph, "interval": args.follow_interval,
                             "batch": args.follow_batch, "nice": args.follow_nice,
                             "rounds": [x for n in counts for x in lags[n]]}
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{'workers':>7}  {'calls':>5}  {'seconds':>7}  {'calls/s':>7}  {'ratio':>5}  "
          "CPU ms/call: workers  server")
    for row in rows:
        print(f"{row['workers']:>7}  {row['calls']:>5}  {row['seconds']:>7}  "
              f"{row['calls_per_second']:>7}  {row['ratio_to_1']:>4}x  "
              f"{row['worker_cpu_ms_per_call']:>19}  {row['server_cpu_ms_per_call']:>6}")
    if args.waits:
        print("journal backends on average while the workers ran (best round): waiting for a "
              "lock / idle in a transaction / active")
        for row in rows:
            print(f"{row['workers']:>7}  {row['backends_lock_wait']:>5}  "
                  f"{row['backends_idle_in_transaction']:>5}  {row['backends_active']:>5}")
    if args.follow:
        nice = "" if args.follow_nice is None else f", autogroup nice {args.follow_nice}"
        print(f"projector lag (`graph follow` into {args.follow_graph}, --interval "
              f"{args.follow_interval:g}, --batch {args.follow_batch}{nice}), every round:")
        print(f"{'workers':>7}  {'samples':>7}  {'p50 s':>6}  {'p99 s':>6}  {'max s':>6}  "
              f"{'catch-up s':>10}  follower: events rounds biggest  ms/event  CPU ms/event"
              "  wait ms/event"
              + ("  store CPU ms/event" if oxigraph is not None else ""))
        for n in counts:
            for x in lags[n]:
                print(f"{n:>7}  {x['lag_samples']:>7}  {x['lag_p50_s']:>6}  "
                      f"{x['lag_p99_s']:>6}  {x['lag_max_s']:>6}  {x['catch_up_s']:>10}  "
                      f"{x['follower_events']:>16} {x['follower_rounds']:>6} "
                      f"{x['follower_biggest_round']:>7}  {x['follower_ms_per_event']:>8}  "
                      f"{x['follower_cpu_ms_per_event']:>12}  "
                      f"{x['follower_wait_ms_per_event']:>13}"
                      + (f"  {x['follower_server_cpu_ms_per_event']:>18}"
                         if oxigraph is not None else ""))
    server_kind = ("" if server is None else
                   " (throw-away server, fsync=on)" if args.durable else
                   " (throw-away server, fsync=off: --durable for on)")
    print(f"journal{server_kind}: {report.events} events, chain intact; load average "
          f"{figures['load_before']} -> {figures['load_after']} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
