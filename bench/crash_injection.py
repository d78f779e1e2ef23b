"""Crash injection: randomized SIGKILLs over the demo tools, checked against the ledger.

Each trial forks a child from this (single-threaded) process — the package is already
imported, and warmed by one runtime used and closed on a throw-away home (``warm_up``), so
a trial costs milliseconds rather than an interpreter start. The child opens
the runtime, which first reconciles whatever the previous victim left dangling, then
submits a random sequence of demo proposals (new ones and re-submissions of earlier ones;
closing an account waits for an approval that a second identity gives) and is killed
with SIGKILL, either

* at a crash point (``crashpoints.CRASH_POINTS``) chosen at random, on a random pass (1-4)
  through it, armed in the child, or
* at a random moment, by the parent, after a random delay.

After every kill the parent checks, against the ledger's own record of every call that
reached it: no idempotency key applied twice; every event the child saw acknowledged by
the journal is still there with the same hash; the hash chain verifies. At the end one
more restart must leave no intent dangling (each one resolved, or a human task).

With ``--workers N`` that many victims run at once on the one journal (each killed on its
own schedule; a starting victim reconciles the intents of dead ones and leaves those of
live ones alone); with ``--postgres`` the journal is a throw-away PostgreSQL server
(``--journal URL``: an existing, migrated one).

Run: ``.venv/bin/python bench/crash_injection.py [--kills 200] [--seed 7] [--json]
[--workers 4] [--postgres]``.
Prints the figures; exits 1 if any check failed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import random
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from cradle_kg import Runtime, crashpoints
from cradle_kg.config import save_config
from cradle_kg.demo.scenario import (
    AGENT,
    APPROVER,
    DEMO_TOKENS,
    LEDGER_PACK,
    demo_config,
    ledger_for_path,
    prepare_home,
)
from cradle_kg.errors import ApprovalError
from cradle_kg.packs.registry import PackRegistry
from cradle_kg.records import ApprovalStatus
from cradle_kg.storage import JOURNAL_URL_ENV, open_home_journal

OPS_PER_CHILD = 6
#: the share of draws that re-submit a proposal already submitted by an earlier victim
RESUBMIT_SHARE = 0.4
RANDOM_MOMENT_SHARE = 0.3
HANG_SECONDS = 60.0


def proposal_for(k: int) -> dict[str, Any]:
    """The k-th proposal of the pool: always the same, so drawing it again re-submits it."""
    kind = k % 5
    if kind in (0, 1):
        tool, args = "demo.ledger.credit", {"account": f"acct-{k % 7}", "amount": k + 1}
    elif kind == 2:
        tool, args = "demo.ledger.credit_unreliable", {"account": f"acct-{k % 7}",
                                                       "amount": k + 1}
    elif kind == 3:
        tool, args = "demo.ledger.close_account", {"account": f"acct-close-{k}"}
    else:
        tool, args = "demo.ledger.balance", {"account": f"acct-{k % 7}"}
    return {"id": f"p-{k}", "task_id": f"task-{k}", "agent_id": AGENT,
            "action": {"action_type": tool, "target": "ledger:" + args["account"],
                       "arguments": args}}


# --- the child --------------------------------------------------------------------------


def child(home: Path, *, point: str, seed: int, fresh: int, log: Path, report: Path) -> None:
    rng = random.Random(seed)
    crashpoints.arm(point, at_pass=rng.randint(1, 4))  # in this process only
    rt = Runtime(home, recover=False)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def acknowledged(events: Any) -> None:  # os.write: in the kernel before the next step
        os.write(fd, "".join(f"{e.seq} {e.hash}\n" for e in events).encode())

    rt.listeners.append(acknowledged)
    recovered = rt.recover()
    tmp = report.with_suffix(".tmp")
    tmp.write_text(json.dumps([i.result for i in recovered.items]))
    tmp.replace(report)  # all or nothing, even under SIGKILL
    for i in range(OPS_PER_CHILD):
        again = fresh > 0 and rng.random() < RESUBMIT_SHARE
        out = rt.submit(proposal_for(rng.randrange(fresh) if again else fresh + i))
        if out.status.value == "awaiting_approval" and out.approval is not None:
            # decided already by an earlier victim? the next draw of it resumes it
            with contextlib.suppress(ApprovalError):
                rt.decide_approval(out.approval.id, approver_id=APPROVER,
                                   token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
    os._exit(0)


def spawn(home: Path, *, point: str, seed: int, fresh: int, log: Path, report: Path) -> int:
    """Fork a child (the parent stays single-threaded, holding no database connection)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        try:
            child(home, point=point, seed=seed, fresh=fresh, log=log, report=report)
        finally:
            os._exit(3)
    return pid


def _ended(status: int, seed: int) -> int | None:
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status)
    if os.WEXITSTATUS(status) != 0:
        raise RuntimeError(f"child failed with exit {os.WEXITSTATUS(status)} (seed {seed})")
    return None


# --- the checks -------------------------------------------------------------------------


@functools.cache
def _ledger_class() -> Any:
    """The demo ledger pack's ``Ledger`` class (``demo_ledger``'s), found once: finding it
    reads every pack's manifest (~10 ms), and the checks read the ledger after every kill."""
    return PackRegistry.discover().get(LEDGER_PACK).resolve("ledger:Ledger")


def ledger(home: Path) -> Any:
    """``demo_ledger(home)``: the same class over the same file."""
    return _ledger_class()(ledger_for_path(home))


def duplicated_keys(home: Path) -> list[str]:
    """Keys the ledger applied more than once, from its own record of every call."""
    calls = Counter(k for k, _op in ledger(home).applied_calls())
    return sorted(k for k, n in calls.items() if n > 1)


def lost_events(home: Path, log: Path) -> int:
    """Events a child saw acknowledged that the journal does not hold (same seq, same hash)."""
    if not log.exists():
        return 0
    acked = [line.split() for line in log.read_text().splitlines() if line.strip()]
    if not acked:
        return 0
    first = min(int(seq) for seq, _ in acked)
    with open_home_journal(home) as journal:
        stored = {e.seq: e.hash for e in journal.events(since_seq=first - 1)}
    return sum(1 for seq, h in acked if stored.get(int(seq)) != h)


def effects_without_intent(home: Path) -> int:
    with open_home_journal(home) as journal:
        keys = {e.payload["action"]["idempotency_key"]
                for e in journal.events_of_kind("action.intent")}
    applied = {k for k, _ in ledger(home).applied_calls()}
    return len(applied - keys)


class Trial:
    """One victim: its draw, its files, when the parent kills it (a plain class: the tests
    load this file without registering it as a module, which a dataclass needs)."""

    def __init__(self, number: int, seed: int, point: str, random_moment: bool, log: Path,
                 report: Path, kill_at: float | None, deadline: float) -> None:
        self.number, self.seed, self.point, self.random_moment = number, seed, point, \
            random_moment
        self.log, self.report, self.kill_at, self.deadline = log, report, kill_at, deadline


def _until_one_ends(live: dict[int, Trial]) -> None:
    """Sleep until a victim ends or the next kill or deadline is due: a process's ``pidfd``
    is readable once it has ended (a 0.5 ms polling loop here woke ~2,000 times a second
    for the whole run, taking a core's share from the victims)."""
    due = min([t.deadline for t in live.values()]
              + [t.kill_at for t in live.values() if t.kill_at is not None])
    fds = [os.pidfd_open(pid) for pid in live]
    try:
        select.select(fds, [], [], max(0.0, due - time.monotonic()))
    finally:
        for fd in fds:
            os.close(fd)


def _prepare(home: Path) -> None:
    prepare_home(home)
    save_config(home / "config.json", demo_config().model_copy(update={"limits": ()}))


def warm_up() -> None:
    """Open and use a runtime once in this process, on a throw-away home of its own (always
    an embedded journal: never the victims'), then close it: what a first open in a process
    builds and keeps for the next (packs read, policies parsed, code paths imported) is
    then inherited by every forked victim instead of rebuilt in each of them — a victim's
    open and its submits took ~40 % less CPU here. The victims still open their runtime,
    recover and submit as before; this process opens no graph store (nor do the victims),
    is single-threaded again afterwards, native threads included, and holds no connection
    (checked)."""
    url = os.environ.pop(JOURNAL_URL_ENV, None)
    tmp = Path(tempfile.mkdtemp(prefix="cradle-crash-warm-"))
    try:
        _prepare(tmp / "home")
        # no graph store: the victims never open one, and Oxigraph's leaves RocksDB's
        # native threads behind in this process (a child forked after a store was opened
        # here and opening one itself hung on their lock; tests/security/test_08's zygote)
        with Runtime(tmp / "home", graph_sync=False) as rt:
            for k in (0, 2, 3, 4):  # a credit, an unreliable credit, an approval, a read
                out = rt.submit(proposal_for(k))
                if out.status.value == "awaiting_approval" and out.approval is not None:
                    rt.decide_approval(out.approval.id, approver_id=APPROVER,
                                       token=DEMO_TOKENS[APPROVER],
                                       status=ApprovalStatus.APPROVED)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if url is not None:
            os.environ[JOURNAL_URL_ENV] = url
    # native threads count too (threading sees only Python's): /proc/self/task
    if threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
        raise RuntimeError("the warm-up left a thread running: forking now is unsafe")


def run(kills: int, seed: int, home: Path, *, workers: int = 1) -> dict[str, Any]:
    _prepare(home)
    warm_up()
    rng = random.Random(seed)
    by_point: Counter[str] = Counter()
    recovered: Counter[str] = Counter()
    trials = survived = lost = acked = 0
    duplicates: set[str] = set()
    broken_chain = 0
    started = time.perf_counter()
    live: dict[int, Trial] = {}
    while live or (sum(by_point.values()) < kills and trials < kills * 4):
        # keep `workers` victims running at once, all on the one journal
        while (len(live) < workers and sum(by_point.values()) + len(live) < kills
               and trials < kills * 4):
            trials += 1
            random_moment = rng.random() < RANDOM_MOMENT_SHARE
            point = "" if random_moment else rng.choice(crashpoints.CRASH_POINTS)
            now = time.monotonic()
            t = Trial(trials, rng.randrange(2**32), point, random_moment,
                      home / f"trial-{trials}.log", home / f"trial-{trials}.json",
                      now + rng.uniform(0.0, 0.12) * workers if random_moment else None,
                      now + HANG_SECONDS * workers)
            pid = spawn(home, point=point, seed=t.seed, fresh=(trials - 1) * OPS_PER_CHILD,
                        log=t.log, report=t.report)
            live[pid] = t
        ended: list[tuple[Trial, int | None]] = []
        for pid, t in list(live.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                ended.append((live.pop(pid), _ended(status, t.seed)))
                continue
            now = time.monotonic()
            if t.kill_at is not None and now >= t.kill_at:
                os.kill(pid, signal.SIGKILL)
                t.kill_at = None
            elif now > t.deadline:
                for other in live:
                    os.kill(other, signal.SIGKILL)
                raise RuntimeError(f"child hung for {HANG_SECONDS * workers:.0f}s "
                                   f"(seed {t.seed})")
        if not ended:
            _until_one_ends(live)
            continue
        for t, sig in ended:
            if sig == signal.SIGKILL:
                by_point["random_moment" if t.random_moment else t.point] += 1
            else:
                survived += 1
            if t.report.exists():
                recovered.update(json.loads(t.report.read_text()))
            lost += lost_events(home, t.log)
            acked += len(t.log.read_text().splitlines()) if t.log.exists() else 0
            if t.number % 10 == 0:
                with open_home_journal(home) as journal:
                    broken_chain += not journal.verify().intact
        duplicates.update(duplicated_keys(home))
    # the last restart: everything the last victim left must be settled
    with Runtime(home) as rt:
        assert rt.recovery is not None
        recovered.update(i.result for i in rt.recovery.items)
        left = rt.journal.dangling_intents()
        chain = rt.journal.verify()
        intents = len(rt.journal.events_of_kind("action.intent"))
        retries = len(rt.journal.events_of_kind("action.retry"))
        tasks = len(rt.journal.events_of_kind("human_task.opened"))
        replayed = len(rt.journal.events_of_kind("action.replayed"))
    duplicates.update(duplicated_keys(home))
    return {
        "journal": "postgresql" if os.environ.get(JOURNAL_URL_ENV) else "sqlite",
        "workers": workers,
        "trials": trials,
        "kill_points": sum(by_point.values()),
        "kills_by_point": dict(sorted(by_point.items())),
        "children_that_finished": survived,
        "duplicated_effects": len(duplicates),
        "effects_without_intent": effects_without_intent(home),
        "acknowledged_events_checked": acked,
        "lost_events": lost,
        "chain_intact": chain.intact and broken_chain == 0,
        "journal_events": chain.events,
        "intents": intents,
        "same_key_retries": retries,
        "resubmissions_answered_from_the_journal": replayed,
        "human_tasks": tasks,
        "reconciliations": dict(sorted(recovered.items())),
        "dangling_at_end": len(left),
        "seconds": round(time.perf_counter() - started, 1),
    }


def ok(figures: dict[str, Any], kills: int) -> bool:
    return (figures["kill_points"] >= kills and figures["duplicated_effects"] == 0
            and figures["lost_events"] == 0 and figures["chain_intact"]
            and figures["dangling_at_end"] == 0 and figures["effects_without_intent"] == 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200, help="SIGKILLs to inflict")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--home", type=Path, default=None, help="keep the home here")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--workers", type=int, default=1,
                        help="victims running at once on the one journal")
    parser.add_argument("--postgres", action="store_true",
                        help="on a throw-away PostgreSQL server (the machine's binaries)")
    parser.add_argument("--journal", default=None,
                        help="on this PostgreSQL journal (an empty, migrated schema)")
    args = parser.parse_args()
    os.environ.pop("CRADLE_CRASH_AT", None)
    crashpoints.arm("")
    # a folder of its own only when no --home was given (a folder made and then left
    # behind by every run given one was the /tmp/cradle-crash-* left by each test run)
    tmp = None if args.home is not None else Path(tempfile.mkdtemp(prefix="cradle-crash-"))
    home = args.home if tmp is None else tmp / "home"
    server = None
    try:
        if args.postgres and args.journal is None:
            from cradle_kg.storage.pg_scratch import ScratchPostgres

            server = ScratchPostgres()
            args.journal = server.journal_schema()
        if args.journal is not None:
            os.environ[JOURNAL_URL_ENV] = args.journal  # the children inherit it
        else:
            os.environ.pop(JOURNAL_URL_ENV, None)
        figures = run(args.kills, args.seed, home, workers=args.workers)
    finally:
        if server is not None:
            server.stop()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        width = max(len(k) for k in figures)
        for key, value in figures.items():
            print(f"{key:<{width}}  {value}")
    sys.exit(0 if ok(figures, args.kills) else 1)


if __name__ == "__main__":
    main()
