"""Which journal a home uses, and opening it.

``CRADLE_JOURNAL_URL`` (environment) wins over ``"journal"`` in the home's
``config.json``; with neither, the journal is the embedded SQLite file
``<home>/journal.sqlite``. A PostgreSQL journal is a ``postgresql://`` (or
``postgres://``) URL; anything else with a ``://`` is refused.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError
from .chain import Anchor, ChainReport, Progress
from .journal import Journal
from .pg_connect import redact
from .sqlite import SqliteJournal
from .sqlite_verify import verify_journal

JOURNAL_URL_ENV = "CRADLE_JOURNAL_URL"
_PG = ("postgresql://", "postgres://")


def journal_target(default: Path, configured: str | None = None) -> str:
    """The journal to open: the environment's URL, else ``configured``, else ``default``."""
    env = os.environ.get(JOURNAL_URL_ENV, "").strip()
    return env or configured or str(default)


def is_postgres(target: str) -> bool:
    return target.startswith(_PG)


def open_journal(target: str | Path, *, read_only: bool = False) -> Journal:
    """Open the journal at ``target`` (a SQLite path or a PostgreSQL URL); ``read_only``:
    a command that only reads — a SQLite file must exist, and is opened ``mode=ro`` (never
    made, upgraded nor written); a PostgreSQL session's transactions are read only. Either
    refuses an append (:func:`~.journal.read_only_error`)."""
    text = str(target)
    if is_postgres(text):
        from .postgresql import PostgresJournal

        return PostgresJournal(text, read_only=read_only)
    if "://" in text:
        raise InputError(f"journal `{redact(text)}`: not a `postgresql://` URL or a file path",
                         hint="the embedded journal needs no setting; PostgreSQL: "
                              "`postgresql://user@host/db`")
    if read_only and not Path(text).is_file():
        raise InputError(f"no journal at `{text}`", hint="run `cradle-kg demo` or pass --home")
    return SqliteJournal(Path(text), read_only=read_only)


def verify_target(target: str, *, anchor: Anchor | None = None,
                  progress: Progress | None = None, semantics: bool = False) -> ChainReport:
    """``audit verify`` of the journal at ``target``, read only (never creates it)."""
    if is_postgres(target):
        from .pg_verify import verify_postgres

        return verify_postgres(target, anchor=anchor, progress=progress,
                               semantics=semantics)
    return verify_journal(Path(target), anchor=anchor, progress=progress,
                          semantics=semantics)


def home_journal_target(root: Path, configured: str | None = None) -> str:
    """The journal of the home at ``root`` (its ``config.json`` read when ``configured``
    is not given and the environment names none)."""
    from ..home import Home

    home = Home(root)
    if configured is None and not os.environ.get(JOURNAL_URL_ENV, "").strip():
        from ..config import load_config

        configured = load_config(home.config).journal
    return journal_target(home.journal, configured)


def open_home_journal(root: Path, *, must_exist: bool = False) -> Journal:
    """Open the journal of the home at ``root``; ``must_exist``: a command that only
    reads — refuse to create a new embedded journal, and open an existing one read only
    (``mode=ro``: a journal of an older format is refused, not upgraded, and nothing of
    it is written: ``tests/security/test_293``)."""
    return open_journal(home_journal_target(root), read_only=must_exist)


__all__ = ["JOURNAL_URL_ENV", "home_journal_target", "is_postgres", "journal_target",
           "open_home_journal", "open_journal", "redact", "verify_target"]
