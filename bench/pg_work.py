"""What one governed call with an approval costs PostgreSQL, counted instead of timed.

For each size, the runtime-filled home's journal (:func:`synthetic.build_events_home`) is
copied into a throw-away server (``journal copy``'s code), and ``--cycles`` cycles of
*submit a close_account, then decide_approval (the resumed run included)* are run on it.
Printed per size: the rows each journal statement returned (a fold or a scan would return
more in a bigger journal) and the shared-buffer blocks each table and index was read for,
per cycle (``pg_statio_*`` deltas, and how many of them missed the buffer cache). Counts
do not depend on the machine's load, where the times of a loaded 2-core machine do.
Run: ``.venv/bin/python bench/pg_work.py [--sizes 1000,10000,100000] [--cycles 20]``.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from synthetic import approval_cycle, build_events_home

from cradle_kg import Runtime
from cradle_kg.demo.scenario import demo_config
from cradle_kg.storage import JOURNAL_URL_ENV
from cradle_kg.storage.pg_admin import copy_sqlite
from cradle_kg.storage.pg_scratch import ScratchPostgres
from cradle_kg.storage.postgresql import _COLS, PostgresJournal

TABLES = ("SELECT relname, COALESCE(heap_blks_hit, 0) + COALESCE(heap_blks_read, 0), "
          "COALESCE(idx_blks_hit, 0) + COALESCE(idx_blks_read, 0), "
          "COALESCE(heap_blks_read, 0) + COALESCE(idx_blks_read, 0) FROM pg_statio_user_tables")
INDEXES = "SELECT indexrelname, idx_blks_hit + idx_blks_read, 0, 0 FROM pg_statio_user_indexes"


def _stats(url: str) -> dict[str, tuple[int, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(TABLES).fetchall() + conn.execute(INDEXES).fetchall()
    return {str(r[0]): tuple(int(x) for x in r[1:]) for r in rows}


def measure(home: Path, url: str, cycles: int
            ) -> tuple[dict[str, tuple[float, ...]], dict[str, tuple[float, float]]]:
    rows: defaultdict[str, list[int]] = defaultdict(list)
    counting = [False]
    plain = PostgresJournal._query

    def counted(self: PostgresJournal, sql: str, args: Sequence[Any] = ()
                ) -> list[tuple[Any, ...]]:
        out = plain(self, sql, args)
        if counting[0]:
            rows[" ".join(sql.split()).replace(_COLS, "*")[:64]].append(len(out))
        return out

    PostgresJournal._query = counted  # type: ignore[method-assign]
    os.environ[JOURNAL_URL_ENV] = url
    rt = Runtime(home, config=demo_config(), graph_sync=False)
    try:
        def cycle(i: int) -> None:
            approval_cycle(rt, 10**7 + i, f"g-closed-{i}")

        def flush() -> None:  # this backend's counters, to the shared statistics
            rt.journal._query("SELECT pg_stat_force_next_flush()")  # type: ignore[attr-defined]
            rt.journal._query("SELECT 1")  # type: ignore[attr-defined]
            time.sleep(1.2)

        for i in range(3):  # warm-up
            cycle(i)
        flush()
        before = _stats(url)
        counting[0] = True
        for i in range(3, 3 + cycles):
            cycle(i)
        counting[0] = False
        flush()
    finally:
        rt.close()
        PostgresJournal._query = plain  # type: ignore[method-assign]
        os.environ.pop(JOURNAL_URL_ENV, None)
    time.sleep(1.2)
    after = _stats(url)
    blocks = {k: tuple((b - a) / cycles for a, b in zip(before.get(k, (0, 0, 0)), v,
                                                        strict=True))
              for k, v in after.items()}
    return blocks, {k: (len(v) / cycles, statistics.mean(v)) for k, v in rows.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--cycles", type=int, default=20)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    server = ScratchPostgres()
    results = {}
    try:
        for size in sizes:
            source = build_events_home(size)
            url = server.create_database()
            copy_sqlite(source / "journal.sqlite", url)
            with tempfile.TemporaryDirectory(dir=source.parent) as tmp:
                home = Path(tmp) / "home"
                shutil.copytree(source, home, ignore=shutil.ignore_patterns("journal.sqlite*"))
                results[size] = measure(home, url, args.cycles)
            server.drop_database(url)
    finally:
        server.stop()
    print(f"per cycle (submit a close_account + decide_approval), {args.cycles} cycles; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("each journal read: calls per cycle x rows returned per call")
    for name in sorted(results[sizes[0]][1]):
        print(f"  {name:66}" + "".join(
            "{:>12}".format("{:.1f} x {:.1f}".format(*results[s][1].get(name, (0, 0))))
            for s in sizes))
    print("shared-buffer blocks: table heap / its indexes / of which missed; then each index")
    for name in sorted(results[sizes[0]][0]):
        cells = ["/".join(f"{x:.1f}" for x in (results[s][0].get(name) or ())[:3]) for s in sizes]
        if any(c.strip("0./") for c in cells):
            print(f"  {name:28}" + "".join(f"{c:>20}" for c in cells))
    print(f"  {'sizes':28}" + "".join(f"{s:>20,}" for s in sizes))


if __name__ == "__main__":
    main()
