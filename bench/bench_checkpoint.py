"""Where does the WAL checkpoint cost a durable append? Inside the commit (SQLite's own
automatic checkpoint, as before) or in the journal's checkpoint thread (now).

Journals of ``--sizes`` events with random subjects, runs and idempotency keys (the pages
an append touches are scattered, as in a real journal's indexes) are filled once under
``bench/out/``; each round copies one, syncs the copy to disk (a copy left in the page
cache makes every fsync of the measure wait behind its writeback), and times ``--appends``
durable appends of an intent and an outcome, once with SQLite's automatic checkpoint
inside the commit (``wal_autocheckpoint=1000``, the checkpoint thread off) and once with
the thread, alternated in one process. Prints p50 / p99 / max and the ratios thread /
inside. Run: ``.venv/bin/python bench/bench_checkpoint.py [--sizes 1000,400000]
[--appends 3000] [--rounds 3]``. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from synthetic import OUT

import cradle_kg.storage.sqlite as sqlite_journal
from cradle_kg.storage import NewEvent, SqliteJournal

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def pair(i: int) -> list[NewEvent]:
    run = uuid.uuid4().hex
    return [NewEvent(run_id=run, kind="action.intent", subject=f"act:{uuid.uuid4().hex}",
                     actor="agent:a", at=NOW, payload={"tool": "x", "i": i, "pad": "y" * 200},
                     idem_key=uuid.uuid4().hex),
            NewEvent(run_id=run, kind="run.outcome", subject=f"act:{uuid.uuid4().hex}",
                     actor="agent:a", at=NOW, payload={"i": i, "pad": "z" * 200})]


def filled(size: int) -> Path:
    path = OUT / f"checkpoint-{size}.sqlite"
    if not path.exists():
        tmp = path.with_suffix(".partial")
        with SqliteJournal(tmp) as j:
            for batch in range(size // 200):
                j.append([e for i in range(100) for e in pair(batch * 100 + i)], flush=False)
        tmp.rename(path)
    return path


def measure(source: Path, appends: int, *, inside: bool) -> list[float]:
    work = source.parent / "checkpoint-work.sqlite"
    for suffix in ("", "-wal", "-shm", "-writer"):
        Path(f"{work}{suffix}").unlink(missing_ok=True)
    shutil.copy(source, work)
    os.sync()
    commits = sqlite_journal.CHECKPOINT_COMMITS
    if inside:
        sqlite_journal.CHECKPOINT_COMMITS = sys.maxsize  # the thread never asked
    try:
        took = []
        with SqliteJournal(work) as j:
            if inside:
                j._conn.execute("PRAGMA wal_autocheckpoint=1000")  # SQLite's default
            for i in range(appends):
                start = time.perf_counter()
                j.append(pair(i))
                took.append((time.perf_counter() - start) * 1000)
        return took
    finally:
        sqlite_journal.CHECKPOINT_COMMITS = commits
        for suffix in ("", "-wal", "-shm", "-writer"):
            Path(f"{work}{suffix}").unlink(missing_ok=True)


def figures(ms: list[float]) -> tuple[float, float, float]:
    s = sorted(ms)
    return statistics.median(s), s[int(len(s) * 0.99) - 1], s[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,400000")
    parser.add_argument("--appends", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    sources = {size: filled(size) for size in sizes}
    runs: dict[tuple[int, bool], list[tuple[float, float, float]]] = {}
    for round_ in range(args.rounds):
        for size in sizes:
            for inside in (True, False):
                print(f"round {round_ + 1}: {size:,} events, checkpoint "
                      f"{'inside the commit' if inside else 'in the thread'} ...",
                      file=sys.stderr)
                runs.setdefault((size, inside), []).append(
                    figures(measure(sources[size], args.appends, inside=inside)))
    print(f"{args.appends} durable appends of two events per run, {args.rounds} rounds, "
          f"min / median over rounds; load average {os.getloadavg()[0]:.1f}")
    print(f"{'events':>10}  {'checkpoint':<18}{'p50 ms':>14}{'p99 ms':>16}{'max ms':>16}")
    for size in sizes:
        for inside in (True, False):
            rows = runs[(size, inside)]
            cells = "".join(
                f"{min(r[k] for r in rows):>8.2f} /{statistics.median(r[k] for r in rows):>6.2f}"
                for k in range(3))
            print(f"{size:>10,}  {'inside the commit' if inside else 'in the thread':<18}"
                  f"{cells}")
        ratio = [min(r[k] for r in runs[(size, False)]) / min(r[k] for r in runs[(size, True)])
                 for k in range(3)]
        print(f"{'':>10}  {'thread / inside':<18}" + "".join(f"{x:>13.2f}x " for x in ratio))


if __name__ == "__main__":
    main()
