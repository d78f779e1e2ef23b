"""Fixtures the attack modules share."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.demo.scenario import prepare_home
from cradle_kg.home import Home
from cradle_kg.server.dataset import PrivateStore, snapshot_home
from cradle_kg.storage.postgresql import PostgresJournal
from cradle_kg.storage.sqlite import SqliteJournal


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], int]]:
    """How many event rows the journal (either kind) decoded since the fixture began: the
    measure of a read's work that a shared machine's timings cannot give (``test_60``,
    ``test_63``, ``test_70`` … ``test_72``)."""
    count = [0]
    for cls in (SqliteJournal, PostgresJournal):
        def counted(r: tuple[Any, ...], _row: Any = cls._row) -> Any:
            count[0] += 1
            return _row(r)

        monkeypatch.setattr(cls, "_row", staticmethod(counted))
    yield lambda: count[0]


@pytest.fixture
def ledger_home(tmp_path: Path) -> Path:
    """A home prepared as ``cradle-kg demo`` prepares it (the ledger's policy and identities),
    nothing run in it yet (``test_168``, ``test_169``)."""
    root = tmp_path / "home"
    prepare_home(root)
    return root


@pytest.fixture
def private(home: Path, tmp_path: Path) -> Iterator[PrivateStore]:
    """``serve``'s private store made from the test module's ``home`` fixture (a demo home
    whose graph store is closed), as a server makes it at start (``test_160`` …
    ``test_167``)."""
    store = snapshot_home(Home(home), tmp_path / "work")
    yield store
    store.close()
