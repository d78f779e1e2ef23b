"""A home an auditor is handed by the party being audited: a demo home with a few runs,
whose journal file that party then rewrites with the ``sqlite3`` module (every byte of it
is theirs). Shared by ``test_291`` … ``test_293``."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from cradle_kg import Runtime
from tests.security.homes import credit, opened_demo_home

#: the run the author wants the auditor not to see
HIDDEN = "run:task-p-hidden"


def handed_home(factory: pytest.TempPathFactory, name: str) -> Path:
    """A demo home whose embedded journal holds two runs of credits, closed."""
    root = opened_demo_home(factory, name, embedded=True)
    with Runtime(root) as rt:
        for pid in ("p-shown", "p-hidden"):
            assert rt.submit(credit(pid)).status.value == "executed"
    return root


def author(journal: Path) -> sqlite3.Connection:
    """The author's own connection to the file, out of WAL so that every byte they write
    is in the one file handed over."""
    conn = sqlite3.connect(journal, isolation_level=None)
    conn.execute("PRAGMA journal_mode=DELETE")
    return conn


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
