"""Storage: the journal of record behind one interface (:class:`Journal`).

``sqlite`` (the embedded default: ``<home>/journal.sqlite``) and ``postgresql`` (one
database for many workers; ``pip install 'cradle-kg[postgresql]'``), selected by
:func:`open_journal`. Only this package talks to a database driver.

The graph store (the journal's RDF projection) is behind :class:`.graph.GraphStore`: the
embedded on-disk Oxigraph store (:mod:`.oxigraph`, the default) or a remote SPARQL 1.1
store (:mod:`.sparql_http`), selected by :mod:`.graph_opening` (see :mod:`.graph_config`).
Only this package opens an Oxigraph store.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chain import GENESIS_HASH, JOURNAL_FORMAT, Anchor, ChainReport, Progress, event_hash
    from .journal import (
        BEGINNING,
        BUDGET_SCOPES,
        ApprovalGuard,
        ApprovalMoved,
        IdempotencyKeyTaken,
        Journal,
        Lease,
        LimitReached,
        NewEvent,
        RunEnded,
        RunNotNew,
        SubjectMoved,
        UploadCap,
        UploadsReached,
        UsageCap,
        WaitingCap,
        WaitingReached,
    )
    from .opening import (
        JOURNAL_URL_ENV,
        home_journal_target,
        is_postgres,
        journal_target,
        open_home_journal,
        open_journal,
        redact,
        verify_target,
    )
    from .run_state_sql import StateKey
    from .sqlite import SqliteJournal
    from .sqlite_verify import verify_journal
    from .tasks_sql import Decider, KeyAsked

#: where each public name lives: imported on first use (PEP 562), so that a process that
#: needs one storage module — a query worker opens an Oxigraph checkpoint and reads the
#: journal's head — does not import every journal backend and the event records (pydantic)
_HOMES: dict[str, str] = {
    "Anchor": "chain",
    "ApprovalGuard": "journal",
    "ApprovalMoved": "journal",
    "BEGINNING": "journal",
    "BUDGET_SCOPES": "journal",
    "ChainReport": "chain",
    "GENESIS_HASH": "chain",
    "IdempotencyKeyTaken": "journal",
    "JOURNAL_FORMAT": "chain",
    "JOURNAL_URL_ENV": "opening",
    "Journal": "journal",
    "Lease": "journal",
    "LimitReached": "journal",
    "NewEvent": "journal",
    "Progress": "chain",
    "SqliteJournal": "sqlite",
    "StateKey": "run_state_sql",
    "Decider": "tasks_sql",
    "KeyAsked": "tasks_sql",
    "RunEnded": "journal",
    "RunNotNew": "journal",
    "SubjectMoved": "journal",
    "UploadCap": "journal",
    "UploadsReached": "journal",
    "UsageCap": "journal",
    "WaitingCap": "journal",
    "WaitingReached": "journal",
    "event_hash": "chain",
    "home_journal_target": "opening",
    "is_postgres": "opening",
    "journal_target": "opening",
    "open_home_journal": "opening",
    "open_journal": "opening",
    "redact": "opening",
    "verify_journal": "sqlite_verify",
    "verify_target": "opening",
}

__all__ = [
    "BEGINNING",
    "BUDGET_SCOPES",
    "GENESIS_HASH",
    "JOURNAL_FORMAT",
    "JOURNAL_URL_ENV",
    "Anchor",
    "ApprovalGuard",
    "ApprovalMoved",
    "ChainReport",
    "Decider",
    "IdempotencyKeyTaken",
    "Journal",
    "KeyAsked",
    "Lease",
    "LimitReached",
    "NewEvent",
    "Progress",
    "RunEnded",
    "RunNotNew",
    "SqliteJournal",
    "StateKey",
    "SubjectMoved",
    "UploadCap",
    "UploadsReached",
    "UsageCap",
    "WaitingCap",
    "WaitingReached",
    "event_hash",
    "home_journal_target",
    "is_postgres",
    "journal_target",
    "open_home_journal",
    "open_journal",
    "redact",
    "verify_journal",
    "verify_target",
]


def __getattr__(name: str) -> Any:
    module = _HOMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
