"""One agent's large bodies do not stop the MCP gateway from serving the others.

Finding: once ``test_268`` checks the token first, an agent's token still has each body it
sends read by the strict loader on the server's event loop — some 0.4 s for a MiB of
small numbers, during which no request of anyone is served. One agent (``agent:mallory``,
its own token) sending such bodies from two clients took another agent's ``tools/list``
from 20 ms to 2.4 s (median; 4.0 s at worst): every agent of the gateway waits on one,
as ``test_171`` found for ``POST /api/workflows/validate``. Now a body over 64 KiB is
parsed on a worker thread of the gateway's own, two at once in all (not the threads the
calls run on): the event loop serves the other requests meanwhile (the same flood: 10 ms
to 41 ms, median).

``StrictJsonBody`` in process, before an app that answers at once: a ticker on the same
event loop counts how often it ran while a 1 MiB body went through (before: once, the
loop was held for the whole parse).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from cradle_kg.inputs import InputLimits
from cradle_kg.integrations.http_guard import StrictJsonBody

BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                   "params": {"a": [1] * 340_000}}).encode()


async def _through(guard: StrictJsonBody, body: bytes) -> tuple[int, list[int]]:
    """How often a ticker ran while ``body`` went through ``guard``; the statuses sent."""
    ticks, statuses = 0, []
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.001)
            ticks += 1

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    running = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    ticks = 0
    await guard({"type": "http", "method": "POST", "headers": [
        (b"authorization", b"Bearer t")]}, receive, send)
    done.set()
    await running
    return ticks, statuses


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def test_a_large_body_is_parsed_while_the_loop_serves_others() -> None:
    guard = StrictJsonBody(_answer, InputLimits())
    ticks, statuses = asyncio.run(_through(guard, BODY))
    assert statuses == [200]
    assert ticks >= 5, ticks  # before: 1, the loop held for the whole parse


def test_a_refused_large_body_is_refused_as_before() -> None:
    guard = StrictJsonBody(_answer, InputLimits())
    twice = BODY[:-1] + b', "id": 2}'
    _, statuses = asyncio.run(_through(guard, twice))
    assert statuses == [400]
    _, statuses = asyncio.run(_through(guard, b'{"jsonrpc": "2.0", "id": 1, "id": 2}'))
    assert statuses == [400]
