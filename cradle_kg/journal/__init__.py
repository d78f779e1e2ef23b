"""The journal: the single source of truth (append-only, hash-chained, SQLite WAL)."""

from .store import (
    GENESIS_HASH,
    JOURNAL_FORMAT,
    ChainReport,
    IdempotencyKeyTaken,
    Journal,
    NewEvent,
    event_hash,
)
from .verify import Anchor, verify_journal

__all__ = [
    "GENESIS_HASH",
    "JOURNAL_FORMAT",
    "Anchor",
    "ChainReport",
    "IdempotencyKeyTaken",
    "Journal",
    "NewEvent",
    "event_hash",
    "verify_journal",
]
