"""The journal-contract fixtures of this folder: ``target`` is where a journal lives on each
backend (a SQLite file, or a fresh migrated PostgreSQL schema), ``journal`` one open there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg.storage import Journal, open_journal
from tests.journal_backends import BACKENDS


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "journal.sqlite")
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def journal(target: str) -> Iterator[Journal]:
    with open_journal(target) as j:
        yield j
