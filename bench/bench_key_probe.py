"""What probing a SQLite journal's unique indexes costs at a writable open (test_374).

    .venv/bin/python bench/bench_key_probe.py [--events 100000 1000000] [--rounds 30]

For each size, a journal file is made by this code (``open_journal``), then filled with
SQL to ``events`` rows shaped like the runtime's (a 200-byte payload, three hashes, one
event in four an intent with an ``idem_key``; one ``runs`` row for six events): the open
reads no chain, so the rows need not hash. Then, in one process:

- **open**: ``open_journal(path)`` then ``close()`` with the probe of each unique index
  (:mod:`cradle_kg.storage.sqlite_keys`), and without it (``key_index_problem`` replaced
  by nothing), alternated ``rounds`` times: the medians and their ratio;
- the sound checks, each timed alone on the same file (median of 3) and put against the
  open without the probe: ``PRAGMA quick_check`` (every page), and the count of
  ``events_idem_key``'s entries (``INDEXED BY``) with the count of keyed rows
  (``NOT INDEXED``), which finds any entry missing but reads the whole table.

Prints the figures. Asserts nothing.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

from cradle_kg.storage import open_journal, sqlite

PAYLOAD = '{"action":{"action_type":"demo.ledger.credit","arguments":{"account":"acct-1",' \
          '"amount":100},"target":"ledger:acct-1"},"note":"' + "x" * 80 + '"}'
HASH = "sha256:" + "ab" * 32


def _rows(events: int) -> Iterator[tuple[object, ...]]:
    for seq in range(1, events + 1):
        run = f"run:task-{seq // 6:08d}"
        keyed = seq % 4 == 0
        yield (seq, f"evt-{seq:010d}", run, "action.intent" if keyed else "gate.decided",
               f"act:{seq}", "agent:bench", "2026-12-01T00:00:00.000000+00:00", PAYLOAD,
               HASH, HASH, HASH, f"idem:{run}:{seq}" if keyed else None)


def build(path: Path, events: int) -> None:
    open_journal(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", _rows(events))
        conn.executemany("INSERT INTO runs(run_id, first_seq, proposals) VALUES (?,?,1)",
                         ((f"run:task-{i:08d}", i * 6) for i in range(events // 6 + 1)))
        conn.execute("INSERT INTO head(one, seq, hash) VALUES (1, ?, ?)", (events, HASH))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _alone(path: Path, sql: str) -> float:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return statistics.median(_timed(lambda: conn.execute(sql).fetchall())
                                 for _ in range(3))
    finally:
        conn.close()


def measure(path: Path, rounds: int) -> None:
    def opened() -> None:
        open_journal(path).close()

    opened()  # the file's pages in the cache, as for every open after the first
    probed: list[float] = []
    bare: list[float] = []
    for _ in range(rounds):
        probed.append(_timed(opened))
        with mock.patch.object(sqlite, "key_index_problem", lambda conn: None):
            bare.append(_timed(opened))
    with_, without = statistics.median(probed), statistics.median(bare)
    print(f"  open        {with_:9.3f} ms probed  {without:9.3f} ms without  "
          f"({with_ / without:.2f}x, +{(with_ - without) * 1000:.0f} us)")
    quick = _alone(path, "PRAGMA quick_check(1)")
    counts = _alone(path, "SELECT (SELECT count(*) FROM events INDEXED BY events_idem_key "
                          "WHERE idem_key IS NOT NULL), (SELECT count(*) FROM events "
                          "NOT INDEXED WHERE idem_key IS NOT NULL)")
    entries = _alone(path, "SELECT count(*) FROM events INDEXED BY events_idem_key "
                           "WHERE idem_key IS NOT NULL")
    for name, ms in (("quick_check", quick), ("both counts", counts),
                     ("index count", entries)):
        print(f"  {name:11} {ms:9.1f} ms alone      ({(without + ms) / without:.1f}x the open "
              "without the probe)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    for events in args.events:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "journal.sqlite"
            started = time.perf_counter()
            build(path, events)
            print(f"{events:,} events, {path.stat().st_size / 1e6:.0f} MB "
                  f"(built in {time.perf_counter() - started:.0f} s)")
            measure(path, args.rounds)


if __name__ == "__main__":
    main()
