"""One identity checks one workflow file at a time, and the server a few in all.

Finding (eleventh attack review): ``POST /api/workflows/validate`` takes a 256 KiB body
from any token — an agent's too — and parses it on the API's thread pool, holding the GIL:
about 0.9 s of CPU for a full body (``test_166`` brought it down from 4.9 s), and nothing
bounded how many one identity sent at once. An agent's token sending them side by side had
the server process (the JSON API, the web page, every decision: one GIL) parse for
all of them together, as many as the pool's forty threads — here the second request of one
identity, sent while its first was still in flight, was taken like the first, and so was
a third identity's when two others were parsing.

Now an identity has one validation in flight at a time (taken before its body is read, so a
slow upload holds it too), and the server parses at most two at once: past either, the
request is answered 429 with ``Retry-After`` (a ``quota_exceeded``), before any parsing;
another identity's validation, the identity's next one once the first is answered, and
every other route are served as before.

In process, through the app's real router and authentication; a request held in the
middle of its body by the test's own ASGI ``receive``, two held in their parse by a wrapper
that waits for the test before calling the real one (no timing).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server import api_human
from cradle_kg.server.api import make_router
from cradle_kg.server.auth import issue_agent_token

FLOW = (Path(__file__).resolve().parents[2] / "examples" / "workflows"
        / "credit-review.yaml").read_bytes()
CAROL = "user:carol"


def _scope(token: str, length: int) -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/api/workflows/validate",
            "raw_path": b"/api/workflows/validate", "query_string": b"", "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode()),
                        (b"content-type", b"application/yaml"),
                        (b"content-length", str(length).encode())],
            "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80)}


async def _request(app: FastAPI, token: str,
                   receive: Callable[[], Awaitable[dict[str, Any]]] | None = None
                   ) -> tuple[int, dict[str, str], Any]:
    sent: list[dict[str, Any]] = []
    body = [{"type": "http.request", "body": FLOW, "more_body": False}]

    async def whole() -> dict[str, Any]:
        return body.pop() if body else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(_scope(token, len(FLOW)), receive or whole, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    text = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers, json.loads(text)


class Held:
    """A request whose body stops halfway until :meth:`release` (the handler is then
    inside its body read: after anything taken before it)."""

    def __init__(self) -> None:
        self.reading = asyncio.Event()
        self.go_on = asyncio.Event()
        self.calls = 0

    async def receive(self) -> dict[str, Any]:
        self.calls += 1
        half = len(FLOW) // 2
        if self.calls == 1:
            return {"type": "http.request", "body": FLOW[:half], "more_body": True}
        if self.calls == 2:
            self.reading.set()
            await self.go_on.wait()
            return {"type": "http.request", "body": FLOW[half:], "more_body": False}
        await asyncio.Event().wait()  # nothing more: the client waits for the answer
        return {"type": "http.disconnect"}

    def release(self) -> None:
        self.go_on.set()


def _app(rt: Runtime) -> FastAPI:
    app = FastAPI()
    app.state.runtime = rt
    app.include_router(make_router(rt))
    return app


def test_one_identity_validates_one_file_at_a_time(ledger_home: Path) -> None:
    with Runtime(ledger_home, graph_sync=False) as rt:
        agent = issue_agent_token(rt.home, rt.config, AGENT)
    with Runtime(ledger_home, graph_sync=False) as rt:
        app = _app(rt)

        async def scenario() -> None:
            held = Held()
            first = asyncio.create_task(_request(app, agent, held.receive))
            await held.reading.wait()
            # the same agent's second file while its first is in flight (before: 200)
            status, headers, body = await _request(app, agent)
            assert status == 429, body
            assert body["detail"]["error"] == "quota_exceeded"
            assert int(headers["retry-after"]) >= 1
            # another identity is served meanwhile
            status, _, body = await _request(app, DEMO_TOKENS[APPROVER])
            assert status == 200 and body["valid"] is True, body
            held.release()
            status, _, body = await first
            assert status == 200 and body["valid"] is True, body
            # its first answered, the agent's next one is taken
            status, _, body = await _request(app, agent)
            assert status == 200 and body["valid"] is True, body

        asyncio.run(scenario())


def test_the_server_parses_a_few_files_at_once(ledger_home: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(ledger_home / "config.json")
    save_config(ledger_home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers, Approver(id=CAROL, token_hash=token_hash("carol-token")))}))
    with Runtime(ledger_home, graph_sync=False) as rt:
        agent = issue_agent_token(rt.home, rt.config, AGENT)
    # the first two parses wait for the test (then parse as ever); any later one runs at once
    entered, go_on = [0], threading.Event()
    real = api_human.parse_definition

    def parse(*args: Any, **kwargs: Any) -> Any:
        entered[0] += 1
        if entered[0] <= 2:
            go_on.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(api_human, "parse_definition", parse)
    with Runtime(ledger_home, graph_sync=False) as rt:
        app = _app(rt)

        async def scenario() -> None:
            tasks = [asyncio.create_task(_request(app, token))
                     for token in (agent, DEMO_TOKENS[APPROVER])]
            for _ in range(6000):  # both in their parse (each its identity's one)
                if entered[0] >= 2:
                    break
                await asyncio.sleep(0.01)
            assert entered[0] == 2
            status, headers, body = await _request(app, "carol-token")
            assert status == 429, body  # before: 200, a third parse at once
            assert body["detail"]["error"] == "quota_exceeded"
            assert int(headers["retry-after"]) >= 1
            assert entered[0] == 2  # refused before it was parsed
            go_on.set()
            for task in tasks:
                status, _, body = await task
                assert status == 200 and body["valid"] is True, body
            status, _, body = await _request(app, "carol-token")
            assert status == 200 and body["valid"] is True, body

        try:
            asyncio.run(scenario())
        finally:
            go_on.set()
