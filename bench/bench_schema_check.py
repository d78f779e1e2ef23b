"""What checking the journal's schema costs (``tests/security/test_350`` … ``test_352``).

    .venv/bin/python bench/bench_schema_check.py [--rounds 200] [--durable]

A journal opened to write compares its schema with the one the migrations (PostgreSQL) or
this code (SQLite) make, and every PostgreSQL append checks, before its COMMIT, that
what the journal pinned when it opened (``cradle_append``'s catalog row, those of
``events`` and ``head``, the index ``events_idem_key``) has not moved. In one process,
interleaved,
``rounds`` times each:

- **pg open**: ``open_journal(url)`` then ``close()`` on a fresh migrated schema of a
  throw-away server (``--durable``: ``fsync=on``), with the catalog read (``OPEN_SQL``)
  and the function pinned, and with neither (``SELECT 0`` for the prepared check);
- **pg append**: one durable append of one event through ``cradle_append``, with the
  check that nothing pinned moved (a prepared statement before the COMMIT, under the
  append lock), and with
  ``SELECT 0`` in its place (the cost of a statement itself aside); **pg capped**: the
  same for an intent under a cap (two round trips, the rows written by the client);
- **pg runtime**: ``Runtime(home)`` then ``close()`` of the demo's home whose journal is
  that schema, with and without the same (``--runtime-rounds``);
- **sqlite open**: ``open_journal(path)`` then ``close()`` of a journal file, with its
  ``sqlite_master`` compared, and without.

Prints the median of each in ms and the ratio with / without. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

from cradle_kg.storage import (
    JOURNAL_URL_ENV,
    NewEvent,
    UsageCap,
    open_journal,
    postgresql,
    sqlite,
)
from cradle_kg.storage.pg_objects import UNPINNED, Pin
from cradle_kg.storage.pg_scratch import ScratchPostgres

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _open_close(target: str) -> Callable[[], object]:
    return lambda: open_journal(target).close()


def _pair(rounds: int, fn: Callable[[], object],
          without: Callable[[], AbstractContextManager[object]]) -> tuple[float, float]:
    """Median ms of ``fn`` with the check and with ``without()`` in force, interleaved."""
    checked: list[float] = []
    bare: list[float] = []
    for _ in range(rounds):
        checked.append(_timed(fn))
        with without():
            bare.append(_timed(fn))
    return statistics.median(checked), statistics.median(bare)


def _runtime_opens(url: str, rounds: int) -> tuple[float, float]:
    """``Runtime(home)`` then ``close()`` of the demo's home (built once) with its
    journal at ``url``, with and without the checks."""
    from cradle_kg import Runtime
    from cradle_kg.demo.scenario import demo_config, prepare_home

    with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ,
                                                                {JOURNAL_URL_ENV: url}):
        home = Path(tmp) / "home"
        prepare_home(home)
        Runtime(home, config=demo_config()).close()  # the first opening's own work
        return _pair(rounds, lambda: Runtime(home, config=demo_config()).close(),
                     _no_open_check)


def _no_open_check() -> AbstractContextManager[object]:
    """A journal's opening without the catalog read and the function pinned (the
    pin's statements replaced by what they answer on a migrated schema)."""
    stack = ExitStack()
    stack.enter_context(mock.patch.object(postgresql, "open_problem", lambda conn: None))
    stack.enter_context(mock.patch.object(postgresql, "PREPARE_CHECK_SQL", "SELECT 0"))
    stack.enter_context(mock.patch.object(postgresql.PostgresJournal, "_pin",
                                          lambda self: UNPINNED))
    return stack


def _print(name: str, medians: tuple[float, float]) -> None:
    checked, bare = medians
    print(f"{name:12} {checked:8.3f} ms checked  {bare:8.3f} ms without  "
          f"({checked / bare:.2f}x, +{(checked - bare) * 1000:.0f} us)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--runtime-rounds", type=int, default=20)
    parser.add_argument("--durable", action="store_true", help="the server with fsync=on")
    args = parser.parse_args()
    server = ScratchPostgres(durable=args.durable)
    try:
        url = server.journal_schema()
        _print("pg open", _pair(args.rounds, _open_close(url), lambda: _no_open_check()))
        _print("pg runtime", _runtime_opens(url, args.runtime_rounds))
        with open_journal(url) as journal:
            count = iter(range(10**9))

            def append(kind: str = "note", caps: tuple[UsageCap, ...] = ()) -> object:
                i = next(count)
                return journal.append([NewEvent(
                    run_id="run:bench", kind=kind, subject=f"s:{i}", actor="agent:bench",
                    at=T0, payload={"i": i}, caps=caps)])

            _print("pg append", _pair(args.rounds, append, lambda: mock.patch.object(
                Pin, "check_sql", lambda self: "SELECT 0")))
            cap = (UsageCap(scope="*", subject="", since=T0, max_calls=10**9),)
            _print("pg capped", _pair(args.rounds, lambda: append(kind="action.intent",
                                                                   caps=cap),
                                      lambda: mock.patch.object(
                                          Pin, "check_sql", lambda self: "SELECT 0")))
    finally:
        server.stop()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "journal.sqlite")
        open_journal(path).close()
        _print("sqlite open", _pair(args.rounds, _open_close(path), lambda: mock.patch.object(
            sqlite, "schema_problem", lambda found, missing=True: None)))


if __name__ == "__main__":
    main()
