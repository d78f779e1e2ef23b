"""The local declarations store: where a finalized classification is written (SQLite).

It stands for the customs system a broker files into. The finalize tool writes one row
per idempotency key (a repeated key writes nothing new); the verifier reads the row back
through its own read-only connection, never through the writer (``PackStore``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cradle_kg.packs.sdk import PackStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS declarations (
    key             TEXT PRIMARY KEY,   -- the idempotency key the runtime sent
    declaration_id  TEXT NOT NULL,
    hs_code         TEXT NOT NULL,
    permits         TEXT NOT NULL,      -- JSON list
    decision_digest TEXT NOT NULL,
    outcome         TEXT NOT NULL,      -- the classification outcome, JSON
    at              TEXT NOT NULL
);
"""


class Declarations:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = PackStore(path, _SCHEMA)

    def file(self, *, key: str, declaration_id: str, hs_code: str, permits: list[str],
             decision_digest: str, outcome: dict[str, Any]) -> bool:
        """Write once per key; False when the key was already written."""
        with self.store.writing() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO declarations VALUES (?,?,?,?,?,?,?)",
                (key, declaration_id, hs_code, json.dumps(sorted(permits)), decision_digest,
                 json.dumps(outcome, sort_keys=True), datetime.now(UTC).isoformat()))
            return cur.rowcount == 1

    # --- independent reads (the verifier's path) ------------------------------------

    def read(self, key: str) -> dict[str, Any] | None:
        row = self.store.row(
            "SELECT key, declaration_id, hs_code, permits, decision_digest, outcome, at "
            "FROM declarations WHERE key = ?", (key,))
        if row is None:
            return None
        return {"key": row[0], "declaration_id": row[1], "hs_code": row[2],
                "permits_required": json.loads(row[3]), "decision_digest": row[4],
                "outcome": json.loads(row[5]), "at": row[6]}

    def count(self) -> int:
        row = self.store.row("SELECT COUNT(*) FROM declarations")
        return int(row[0]) if row is not None else 0
