"""The journal: the single source of truth (append-only, hash-chained, SQLite WAL)."""

from .store import (
    GENESIS_HASH,
    ChainReport,
    IdempotencyKeyTaken,
    Journal,
    NewEvent,
    event_hash,
)

__all__ = [
    "GENESIS_HASH",
    "ChainReport",
    "IdempotencyKeyTaken",
    "Journal",
    "NewEvent",
    "event_hash",
]
