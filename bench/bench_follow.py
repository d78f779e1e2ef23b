"""The projector's CPU per event, without the workers' load (issue 13).

Fills a throw-away PostgreSQL journal with ``--calls`` governed calls (one runtime, the
demo's ledger credit, 4 accounts, a step per call: 7 events a governed write, as
``bench_workers.py`` writes them),
then runs the follower's own loop (:func:`cradle_kg.graph.follow.follow`) into a fresh
embedded on-disk store, the journal revealed ``--per-round`` events at a time (a proxy
caps its head, as appends arriving during the run would), and prints the loop's CPU per
event (``time.process_time``: RocksDB's background threads included) — over the whole
run and for each sixth of it, which shows how the cost of a write grows with the store's
unflushed memtables. ``--runs`` repeats the follow (same journal, a fresh store each time).

Run: ``.venv/bin/python bench/bench_follow.py [--calls 4000] [--per-round 50] [--runs 2]``
(``--journal URL`` for an existing, migrated journal already holding the events, with
``--home H`` its home).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cradle_kg import Runtime
from cradle_kg.config import save_config
from cradle_kg.demo.scenario import AGENT, demo_config, prepare_home
from cradle_kg.graph.follow import follow
from cradle_kg.graph.knowledge import install
from cradle_kg.packs.hooks import home_knowledge, home_projectors
from cradle_kg.records import AuditEvent
from cradle_kg.storage import JOURNAL_URL_ENV, Journal, open_journal
from cradle_kg.storage.oxigraph import OxigraphStore


class Revealed:
    """A journal whose head moves ``step`` events at each wait (the follower's wake-up)."""

    def __init__(self, inner: Journal, step: int, on_round: Any) -> None:
        self.inner, self.step, self.cap = inner, step, 0
        self.total = inner.head()[0]
        self.stop = threading.Event()
        self.on_round = on_round

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def head(self) -> tuple[int, str]:
        seq, digest = self.inner.head()
        return min(self.cap, seq), digest

    def watermark(self) -> int:
        self.inner.watermark()  # the same query, for its cost
        return self.cap

    def events(self, *, run_id: str | None = None, since_seq: int = 0,
               batch: int = 5000) -> Iterator[AuditEvent]:
        for ev in self.inner.events(since_seq=since_seq,
                                    batch=max(1, min(batch, self.cap - since_seq))):
            if ev.seq > self.cap:
                return
            yield ev

    def wait_for_change(self, timeout: float) -> bool:
        if self.cap >= self.total:
            self.stop.set()
        else:
            self.cap = min(self.total, self.cap + self.step)
            self.on_round(self.cap)
        return True


def fill(home: Path, calls: int) -> None:
    prepare_home(home)
    save_config(home / "config.json", demo_config().model_copy(update={"limits": ()}))
    with Runtime(home, graph_sync=False) as rt:
        for i in range(calls):
            w = i % 4
            rt.submit({"id": f"p-w{w}-{i}", "task_id": f"task-{w}", "agent_id": AGENT,
                       "step": i,  # each call its own key (one key: replays)
                       "action": {"action_type": "demo.ledger.credit",
                                  "target": f"ledger:acct-{w}",
                                  "arguments": {"account": f"acct-{w}", "amount": 1}}})


def one_follow(home: Path, url: str, per_round: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="cradle-bench-follow-"))
    store = OxigraphStore(folder / "graph")
    marks: list[tuple[int, float]] = []
    try:
        install(store, home_knowledge(home))
        projectors = home_projectors(home)
        with open_journal(url) as inner:
            journal = Revealed(inner, per_round,
                               lambda cap: marks.append((cap, time.process_time())))
            cpu, wall = time.process_time(), time.perf_counter()
            marks.append((0, cpu))
            done = follow(store, journal, stop=journal.stop,  # type: ignore[arg-type]
                          report=lambda status: None, projectors=projectors)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        assert store.projected_seq() == journal.total
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)
    sixths = []
    for k in range(1, 7):  # CPU per event over each sixth of the run
        lo = (k - 1) * done // 6
        hi = k * done // 6
        a = min(marks, key=lambda m: abs(m[0] - lo))
        b = min(marks, key=lambda m: abs(m[0] - hi))
        if b[0] > a[0]:
            sixths.append(round(1000 * (b[1] - a[1]) / (b[0] - a[0]), 3))
    return {"events": done, "cpu_ms_per_event": round(1000 * cpu / done, 3),
            "wall_ms_per_event": round(1000 * wall / done, 3), "sixths": sixths}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--per-round", type=int, default=50)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--journal", default=None)
    parser.add_argument("--home", default=None)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cradle-bench-follow-home-"))
    server = None
    try:
        if args.journal is None:
            from cradle_kg.storage.pg_scratch import ScratchPostgres

            server = ScratchPostgres()
            args.journal = server.journal_schema()
            os.environ[JOURNAL_URL_ENV] = args.journal
            home = tmp / "home"
            fill(home, args.calls)
        else:
            home = Path(args.home)
        load = os.getloadavg()[0]
        for _ in range(args.runs):
            row = one_follow(home, args.journal, args.per_round)
            print(f"{row['events']} events, {args.per_round} a round: CPU "
                  f"{row['cpu_ms_per_event']} ms/event (wall {row['wall_ms_per_event']}); "
                  f"each sixth: {row['sixths']}")
        print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
