"""Strict replay of recorded model exchanges (journal-first: an auditor's replay).

A ``ReplayClient`` stands in for a model client: it answers each request with the next
recorded response, and raises ``ReplayDivergenceError`` when the request differs from the
recorded one — a replay never silently answers a question that was not asked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cradle_kg.packs.sdk import ReplayDivergenceError


def load_recorded(path: Path) -> dict[str, Any]:
    """A file of recorded exchanges; it must say ``"recorded": true``."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if data.get("recorded") is not True:
        raise ValueError(f"`{path.name}` is not labelled as recorded")
    return data


class ReplayClient:
    def __init__(self, exchanges: list[dict[str, Any]]) -> None:
        self._exchanges = list(exchanges)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        if not self._exchanges:
            raise ReplayDivergenceError("no recorded exchange left to replay")
        exchange = self._exchanges.pop(0)
        if exchange["request"] != request:
            raise ReplayDivergenceError("request differs from the recorded request")
        response: dict[str, Any] = exchange["response"]
        return response
