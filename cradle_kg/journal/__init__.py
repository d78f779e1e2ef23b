"""The journal: the single source of truth (append-only, hash-chained, SQLite WAL)."""

from .chain import GENESIS_HASH, JOURNAL_FORMAT, ChainReport, event_hash
from .store import IdempotencyKeyTaken, Journal, NewEvent
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
