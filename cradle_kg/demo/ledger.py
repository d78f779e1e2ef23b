"""The demo's local system: a small account ledger in its own SQLite file.

It stands for "a real system an agent can affect": the tools write to it, and the
verifier reads it back through a *separate* connection — an independent source, never
the call that wrote. The ledger keeps its own record of every idempotency key it has
applied, which is what crash recovery and the duplicate-effect checks compare against.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key      TEXT PRIMARY KEY,   -- the idempotency key the runtime sent
    account  TEXT NOT NULL,
    amount   INTEGER NOT NULL,
    at       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS accounts (
    account  TEXT PRIMARY KEY,
    status   TEXT NOT NULL DEFAULT 'open'
);
CREATE TABLE IF NOT EXISTS applied (   -- every call that reached the ledger, duplicates too
    n        INTEGER PRIMARY KEY AUTOINCREMENT,
    key      TEXT NOT NULL,
    op       TEXT NOT NULL
);
"""


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(str(self.path), timeout=30.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        return conn

    def credit(self, *, key: str, account: str, amount: int) -> bool:
        """Apply a credit once per key; False when the key was already applied."""
        with self._connect() as conn:
            conn.execute("INSERT INTO applied(key, op) VALUES (?, 'credit')", (key,))
            cur = conn.execute(
                "INSERT OR IGNORE INTO entries(key, account, amount, at) VALUES (?,?,?,?)",
                (key, account, amount, datetime.now(UTC).isoformat()),
            )
            conn.execute("INSERT OR IGNORE INTO accounts(account) VALUES (?)", (account,))
            return cur.rowcount == 1

    def close_account(self, *, key: str, account: str) -> None:
        with self._connect() as conn:
            conn.execute("INSERT INTO applied(key, op) VALUES (?, 'close')", (key,))
            conn.execute("INSERT OR IGNORE INTO accounts(account) VALUES (?)", (account,))
            conn.execute("UPDATE accounts SET status = 'closed' WHERE account = ?", (account,))

    # --- independent reads (the verifier's path) ------------------------------------

    def entry(self, key: str) -> dict[str, Any] | None:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT key, account, amount, at FROM entries WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return {"key": row[0], "account": row[1], "amount": row[2], "at": row[3]}

    def balance(self, account: str) -> int:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT COALESCE(SUM(amount), 0) FROM entries WHERE account = ?", (account,)
            ).fetchone()
        return int(row[0])

    def account_status(self, account: str) -> str | None:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT status FROM accounts WHERE account = ?", (account,)
            ).fetchone()
        return None if row is None else str(row[0])

    def entries_per_key(self) -> dict[str, int]:
        """How many ledger rows each key produced (a duplicate effect would show as 2)."""
        with self._connect() as conn:
            rows = conn.execute("SELECT key, COUNT(*) FROM entries GROUP BY key").fetchall()
        return {str(k): int(n) for k, n in rows}

    def applied_calls(self) -> list[tuple[str, str]]:
        with self._connect() as conn:
            rows = conn.execute("SELECT key, op FROM applied ORDER BY n").fetchall()
        return [(str(k), str(op)) for k, op in rows]
