"""What a read costs, counted: the attack modules' measure of work (``test_86`` … ``test_92``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def rows_read(decoded: Callable[[], int], read: Callable[[], Any]) -> tuple[int, Any]:
    """How many event rows ``read()`` had the journal decode (the ``decoded`` fixture of
    ``conftest.py``), and what it returned."""
    before = decoded()
    out = read()
    return decoded() - before, out
