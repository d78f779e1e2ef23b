"""The demo's local system: a small account ledger in its own SQLite file.

It stands for "a real system an agent can affect": the tools write to it, and the
verifiers read it back through a *separate*, read-only connection — an independent
source, never the call that wrote. The ledger keeps its own record of every idempotency
key it has applied, which is what crash recovery and the duplicate-effect checks compare
against.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cradle_kg.packs.sdk import PackStore, ToolRefused

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key      TEXT PRIMARY KEY,   -- the idempotency key the runtime sent
    account  TEXT NOT NULL,
    amount   INTEGER NOT NULL,
    at       TEXT NOT NULL
);
-- a balance sums one account's entries: an index, not a scan of every entry ever written
CREATE INDEX IF NOT EXISTS entries_account ON entries(account, amount);
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


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Ledger:
    def __init__(self, path: Path, *, clock: Callable[[], datetime] = _utcnow) -> None:
        self.path = path
        self.store = PackStore(path, _SCHEMA)
        self.clock = clock

    def credit(self, *, key: str, account: str, amount: int) -> bool:
        """Apply a credit once per key; False when the key was already applied. A closed
        account takes no credit (``ToolRefused`` ``account_closed``, nothing written): it is
        closed for good (tests/security/test_505) — checked in the transaction that would
        write, before it writes (tests/security/test_557)."""
        with self.store.writing() as conn:
            row = conn.execute("SELECT status FROM accounts WHERE account = ?",
                               (account,)).fetchone()
            if row is not None and row[0] == "closed":
                raise ToolRefused("account_closed",
                                  f"account `{account}` is closed: it takes no credit")
            conn.execute("INSERT INTO applied(key, op) VALUES (?, 'credit')", (key,))
            cur = conn.execute(
                "INSERT OR IGNORE INTO entries(key, account, amount, at) VALUES (?,?,?,?)",
                (key, account, amount, self.clock().isoformat()),
            )
            conn.execute("INSERT OR IGNORE INTO accounts(account) VALUES (?)", (account,))
            return cur.rowcount == 1

    def close_account(self, *, key: str, account: str) -> None:
        with self.store.writing() as conn:
            conn.execute("INSERT INTO applied(key, op) VALUES (?, 'close')", (key,))
            conn.execute("INSERT OR IGNORE INTO accounts(account) VALUES (?)", (account,))
            conn.execute("UPDATE accounts SET status = 'closed' WHERE account = ?", (account,))

    # --- independent reads (the verifier's path) ------------------------------------

    def entry(self, key: str) -> dict[str, Any] | None:
        row = self.store.row("SELECT key, account, amount, at FROM entries WHERE key = ?",
                             (key,))
        if row is None:
            return None
        return {"key": row[0], "account": row[1], "amount": row[2], "at": row[3]}

    def balance(self, account: str) -> int:
        row = self.store.row(
            "SELECT COALESCE(SUM(amount), 0) FROM entries WHERE account = ?", (account,))
        return int(row[0]) if row is not None else 0

    def account_status(self, account: str) -> str | None:
        row = self.store.row("SELECT status FROM accounts WHERE account = ?", (account,))
        return None if row is None else str(row[0])

    def entries_per_key(self) -> dict[str, int]:
        """How many ledger rows each key produced (a duplicate effect would show as 2)."""
        rows = self.store.rows("SELECT key, COUNT(*) FROM entries GROUP BY key")
        return {str(k): int(n) for k, n in rows}

    def applied_calls(self) -> list[tuple[str, str]]:
        rows = self.store.rows("SELECT key, op FROM applied ORDER BY n")
        return [(str(k), str(op)) for k, op in rows]
