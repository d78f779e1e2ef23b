"""What ``audit verify``'s structure check (``PRAGMA integrity_check``, test_291) costs.

A home of the real runtime (``bench/synthetic.py``, cached under ``bench/out/``) is
verified in this process with the check and without it (the baseline: the same verify
with the check replaced by nothing), alternated, and the medians are printed with their
ratio. The check alone is timed too.

    .venv/bin/python bench/bench_verify_integrity.py --events 54000 --rounds 5
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from synthetic import build_events_home

from cradle_kg.storage import sqlite_verify


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=54_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    journal = build_events_home(args.events) / "journal.sqlite"
    checked = sqlite_verify._check_structure

    def without(_conn: sqlite3.Connection) -> None:
        return None

    def verify(check: Callable[[sqlite3.Connection], None]) -> float:
        sqlite_verify._check_structure = check  # type: ignore[assignment]
        try:
            seconds = _timed(lambda: sqlite_verify.verify_journal(journal))
        finally:
            sqlite_verify._check_structure = checked  # type: ignore[assignment]
        return seconds

    def alone() -> float:
        conn = sqlite3.connect(f"file:{journal}?mode=ro&immutable=1", uri=True)
        try:
            return _timed(lambda: conn.execute("PRAGMA integrity_check(1)").fetchone())
        finally:
            conn.close()

    assert sqlite_verify.verify_journal(journal).intact
    base, new, check = [], [], []
    for _ in range(args.rounds):
        base.append(verify(without))
        new.append(verify(checked))
        check.append(alone())
    events = sqlite3.connect(f"file:{journal}?mode=ro&immutable=1", uri=True).execute(
        "SELECT COUNT(*) FROM events").fetchone()[0]
    size = Path(journal).stat().st_size
    b, n = statistics.median(base), statistics.median(new)
    print(f"journal: {events} events, {size / 1e6:.1f} MB")
    print(f"verify without the check: median {b:.3f} s (min {min(base):.3f})")
    print(f"verify with the check:    median {n:.3f} s (min {min(new):.3f})")
    print(f"integrity_check alone:    median {statistics.median(check):.3f} s")
    print(f"ratio with / without: {n / b:.3f}")


if __name__ == "__main__":
    main()
