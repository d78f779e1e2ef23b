"""Storage: the journal of record behind one interface (:class:`Journal`).

``sqlite`` (the embedded default: ``<home>/journal.sqlite``) and ``postgresql`` (one
database for many workers; ``pip install 'cradle-kg[postgresql]'``), selected by
:func:`open_journal`. Only this package talks to a database driver.

The graph store (the journal's RDF projection) is behind :class:`.graph.GraphStore`: the
embedded on-disk Oxigraph store (:mod:`.oxigraph`, the default) or a remote SPARQL 1.1
store (:mod:`.sparql_http`), selected by :mod:`.graph_opening` (see :mod:`.graph_config`).
Only this package opens an Oxigraph store.
"""

from .chain import GENESIS_HASH, JOURNAL_FORMAT, Anchor, ChainReport, Progress, event_hash
from .journal import (
    BEGINNING,
    BUDGET_SCOPES,
    IdempotencyKeyTaken,
    Journal,
    Lease,
    LimitReached,
    NewEvent,
    SubjectMoved,
    UsageCap,
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

__all__ = [
    "BEGINNING",
    "BUDGET_SCOPES",
    "GENESIS_HASH",
    "JOURNAL_FORMAT",
    "JOURNAL_URL_ENV",
    "Anchor",
    "ChainReport",
    "IdempotencyKeyTaken",
    "Journal",
    "Lease",
    "LimitReached",
    "NewEvent",
    "Progress",
    "SqliteJournal",
    "StateKey",
    "SubjectMoved",
    "UsageCap",
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
