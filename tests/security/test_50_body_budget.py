"""Many bodies held at once cannot grow the server without bound.

Finding: the body cap (``--max-body-bytes``, 1 MiB) bounded one request, not all of them.
The query workers of ``cradle-kg serve`` read a body whole before passing the request on
(the cap is checked before authentication), so from one unauthenticated client, 300
connections that each sent a 1 MiB body but its last byte grew the server's processes by
~325 MB (306 → 631 MB), ~1.1 MB a connection, for as long as the connections stayed (held
for ever before ``test_49``'s deadlines, 60 s since): 3,000 connections were 3 GB. The
streamable-HTTP endpoint of ``mcp serve`` read bodies the same way before checking the
token. Now each process keeps a budget of the bodies it holds at once
(:class:`cradle_kg.server.guard.BodyBudget`, 64 MiB — at least four of the largest
allowed): a body that would pass it is refused, 503 with ``Retry-After: 1`` ("send it
again shortly"), and the growth stays near the budget (+139 MB for the same 300, two
workers).

A real ``cradle-kg serve`` (two query workers) and 320 raw connections.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg.server.guard import BODY_BUDGET_BYTES
from tests import oneshot

from ..server.conftest import make_demo_home, start_server, stop_server

CONNECTIONS = 320
SIZE = 1_048_576


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MB."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                total += next(int(line.split()[1]) for line in status
                              if line.startswith("VmRSS"))
            with open(f"/proc/{current}/task/{current}/children") as children:
                todo += [int(c) for c in children.read().split()]
        except (OSError, StopIteration):
            continue
    return total / 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    home = make_demo_home(tmp_path_factory.mktemp("bodies") / "home")
    log = tmp_path_factory.mktemp("log") / "serve.log"
    # the default limits and two workers (the test server's smaller limits do not matter)
    server = start_server(["--home", str(home.path)], log, home.path)
    yield server.url, server.process.pid
    stop_server(server)


@pytest.mark.slow
def test_bodies_held_at_once_stay_within_the_budget(served: tuple[str, int]) -> None:
    url, pid = served
    port = int(url.rsplit(":", 1)[1])
    before = tree_rss_mb(pid)
    held: list[socket.socket] = []
    body = b"q" * (SIZE - 1)  # all but the last byte: the body never ends
    try:
        for _ in range(CONNECTIONS):
            conn = socket.create_connection(("127.0.0.1", port), timeout=10)
            held.append(conn)
            # a refused body is answered 503 and the connection closed while it is sent
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                conn.sendall(b"POST /api/proposals HTTP/1.1\r\nHost: x\r\nContent-Type: "
                             b"application/json\r\nContent-Length: %d\r\n\r\n" % SIZE)
                conn.sendall(body)
        time.sleep(2)
        grown = tree_rss_mb(pid) - before
        # two workers, each holding at most its budget (and what Python keeps of it)
        assert grown < 2 * BODY_BUDGET_BYTES / 1_048_576 + 90, f"+{grown:.0f} MB"
        # a held body's connection waits for its last byte; a refused one was answered 503
        # and closed (the 503 may be lost to the reset of the unread rest of its body)
        refused = 0
        for conn in held:
            conn.settimeout(0.05)
            try:
                first = conn.recv(64)
                refused += first == b"" or first.startswith(b"HTTP/1.1 503 ")
            except TimeoutError:
                pass  # held
            except OSError:
                refused += 1  # reset
        assert refused >= CONNECTIONS // 2, refused
        assert oneshot.get(url + "/healthz", timeout=10).status_code == 200
    finally:
        for conn in held:
            conn.close()
    # once the held bodies are gone, a body is taken again
    answer = oneshot.post(url + "/api/proposals", json={"x": 1}, timeout=10)
    assert answer.status_code in (401, 403, 422), answer.text


def test_the_budget_counts_what_is_held_and_gives_it_back(tmp_path: Path) -> None:
    from cradle_kg.server.guard import BodyBudget

    budget = BodyBudget(10, largest=1)
    assert budget.limit == 10
    assert budget.take(6) and not budget.take(5) and budget.take(4)
    budget.give(6)
    assert budget.take(6) and budget.held == 10
    assert BodyBudget(10, largest=8).limit == 32  # room for four of the largest at least


def test_the_mcp_endpoint_reads_bodies_within_its_budget_too() -> None:
    """``mcp serve``'s strict JSON body reader (once the token is checked) shares the rule:
    a body its process has no room for is a 503, and the app is not called."""
    import asyncio
    from typing import Any

    from cradle_kg.inputs import InputLimits
    from cradle_kg.integrations.http_guard import StrictJsonBody

    called: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        called.append((await receive())["body"])

    guard = StrictJsonBody(app, InputLimits())
    guard.budget.held = guard.budget.limit - 10  # other connections' bodies held
    sent: list[dict[str, Any]] = []

    async def run(body: bytes) -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await guard({"type": "http", "method": "POST",
                     "headers": [(b"authorization", b"Bearer x")]}, receive, send)

    asyncio.run(run(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'))
    assert sent[0]["status"] == 503 and not called
    assert guard.budget.held == guard.budget.limit - 10  # nothing kept of the refused
    asyncio.run(run(b"{}"))
    assert called == [b"{}"] and guard.budget.held == guard.budget.limit - 10
