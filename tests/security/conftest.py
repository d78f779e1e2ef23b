"""Fixtures the attack modules share."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

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
