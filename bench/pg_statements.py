"""How many statements one governed call sends a PostgreSQL journal, counted.

A fresh demo home on a throw-away server (migrated, empty journal); after a few warm-up
calls, each kind of call is made ``--calls`` times and every statement psycopg sends is
counted (``Cursor.execute`` once each — each statement of a multi-statement string, as the
append sends — ``Cursor.executemany`` once per parameter row),
grouped by its first words. Printed per call: the statements of each group and the total.
Counts do not depend on the machine's load. Run:
``.venv/bin/python bench/pg_statements.py [--calls 20]``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import psycopg
from synthetic import approval_cycle, proposal

from cradle_kg import Runtime
from cradle_kg.demo.scenario import demo_config, prepare_home
from cradle_kg.integrations.calls import GovernedSession
from cradle_kg.storage import JOURNAL_URL_ENV
from cradle_kg.storage.pg_admin import migrate
from cradle_kg.storage.pg_scratch import ScratchPostgres

AGENT = "agent:ledger-assistant"


def _group(sql: object) -> str:
    text = " ".join(str(sql).split())
    m = re.match(r"(INSERT INTO \w+|UPDATE \w+|DELETE FROM \w+|SELECT pg_\w+|SET LOCAL|"
                 r"BEGIN|COMMIT|ROLLBACK|WITH|SELECT .{0,40}? FROM \w+)", text)
    return m.group(1) if m else text[:40]


def count(calls: int) -> dict[str, Counter[str]]:
    counts: Counter[str] = Counter()
    plain_execute, plain_many = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def execute(self: psycopg.Cursor[Any], query: Any, params: Any = None,
                **kw: Any) -> Any:
        # the append's one query string (client-bound, ";\n" between its statements:
        # postgresql.PostgresJournal._one_trip) counts each of its statements
        parts = str(query).split(";\n") if params is None else [query]
        for part in parts:
            counts[_group(part)] += 1
        return plain_execute(self, query, params, **kw)

    def executemany(self: psycopg.Cursor[Any], query: Any, params_seq: Iterable[Any],
                    **kw: Any) -> Any:
        rows = list(params_seq)
        counts[_group(query)] += len(rows)
        return plain_many(self, query, rows, **kw)

    server = ScratchPostgres()
    out: dict[str, Counter[str]] = {}
    try:
        url = server.create_database()
        migrate(url)
        os.environ[JOURNAL_URL_ENV] = url
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"
            prepare_home(home)
            rt = Runtime(home, config=demo_config(), graph_sync=False)
            session = GovernedSession(rt, AGENT)
            n = [0]

            def read() -> None:
                assert not session.call("demo.ledger.balance", {"account": "acct-1"}).is_error

            def write() -> None:
                n[0] += 1
                assert rt.submit(proposal(10**6 + n[0], "demo.ledger.credit",
                                          {"account": "acct-1", "amount": 3})).ok

            def approval() -> None:
                n[0] += 1
                approval_cycle(rt, 10**6 + n[0], f"c-{n[0]}")

            kinds: dict[str, Callable[[], None]] = {
                "governed read (MCP session, balance)": read,
                "governed write (submit credit)": write,
                "close_account + decide_approval": approval}
            psycopg.Cursor.execute = execute  # type: ignore[method-assign,assignment]
            psycopg.Cursor.executemany = executemany  # type: ignore[method-assign]
            try:
                for name, call in kinds.items():
                    for _ in range(3):
                        call()
                    counts.clear()
                    for _ in range(calls):
                        call()
                    out[name] = Counter({k: v for k, v in counts.items()})
            finally:
                psycopg.Cursor.execute = plain_execute  # type: ignore[method-assign]
                psycopg.Cursor.executemany = plain_many  # type: ignore[method-assign]
                rt.close()
    finally:
        os.environ.pop(JOURNAL_URL_ENV, None)
        server.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    for name, counts in count(args.calls).items():
        total = sum(counts.values()) / args.calls
        print(f"{name}: {total:.1f} statements per call")
        for group, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n / args.calls:6.1f}  {group}")


if __name__ == "__main__":
    main()
