"""What listens on the app's Unix socket: ``/healthz`` at once, the app on first need.

The query workers answer ``/sparql`` and ``/queries/NAME`` themselves and pass everything
else on to the server process. There, :class:`AppShell` — plain ASGI, nothing imported
but what the workers' supervisor already holds — answers ``GET /healthz`` itself and
builds the app (:func:`.app.create_app`: FastAPI, the runtime and its packs, policies and
journal lease) on the first request that needs it: the JSON API, the page, ``/docs``,
the list of named queries, a CORS preflight. A deployment that only queries never pays
for the app (~45 MB of the server process, and its imports); the first such request
waits for the build (about a second). A runtime that cannot be opened (a broken policy,
a journal that refuses the lease) answers 503 with the reason, and the next request
tries again; the queries are not affected.

The shell owns the server's lifespan: at shutdown it stops the workers, closes the
private store and the runtime (if it was built) and removes the private folder.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import CradleError
from .guard import HEADERS, ASGIApp, Receive, Scope, Send
from .launch import ServerSettings, release_owner, serving_mode
from .supervisor import QueryFront

if TYPE_CHECKING:
    from ..loop.runtime import Runtime


#: what ``/healthz`` tells a caller a closed graph's readers do not admit
LIVENESS = frozenset({"mode", "workers_ready", "workers", "network_sandboxed", "compaction"})


class AppShell:
    """The server process's ASGI app: ``/healthz`` here, the rest by the app built on demand."""

    def __init__(self, settings: ServerSettings, front: QueryFront) -> None:
        self.settings = settings
        self.front = front
        self.mode = serving_mode(settings)
        #: the app, once a request needed it
        self.app: ASGIApp | None = None
        self.runtime: Runtime | None = None
        self._building: asyncio.Lock | None = None
        self._closed = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "http" and scope["path"] == "/healthz" \
                and scope["method"] == "GET":
            await self._health(scope, send)
            return
        app = self.app if self.app is not None else await self._build(send)
        if app is not None:
            await app(scope, receive, send)

    async def _build(self, send: Send) -> ASGIApp | None:
        """Build the app once (concurrent first requests wait for the one build)."""
        if self._building is None:
            self._building = asyncio.Lock()
        async with self._building:
            if self.app is None:
                try:
                    self.app = await asyncio.to_thread(self._make)
                except CradleError as exc:  # the next request tries again
                    await _answer(send, 503, "text/plain; charset=utf-8",
                                  f"the runtime could not be opened: {exc.message}".encode(),
                                  [])
                    return None
        return self.app

    def _make(self) -> ASGIApp:
        from .app import create_app, open_runtime

        runtime = open_runtime(self.settings)
        try:
            app = create_app(self.settings, self.front, runtime)
        except BaseException:
            if runtime is not None:
                runtime.close()
            raise
        if self._closed:  # shut down meanwhile: nothing may hold the journal now
            if runtime is not None:
                runtime.close()
        else:
            self.runtime = runtime
        return app

    async def _health(self, scope: Scope, send: Send) -> None:
        health: dict[str, Any] = {"mode": self.mode, **self.front.health()}
        readers = self.front.config.readers
        if not readers.open:
            # INVARIANT: a closed graph's size and generations are its readers' to know;
            # anyone else is told the server lives (before, anyone read them, and the
            # compaction's error text: tests/security/test_176)
            header = next((bytes(v).decode("latin-1") for k, v in scope["headers"]
                           if k == b"authorization"), None)
            if readers.refusal(header) is not None:
                health = {k: v for k, v in health.items() if k in LIVENESS}
        body = json.dumps(health, ensure_ascii=False,
                          allow_nan=False, separators=(",", ":")).encode("utf-8")
        await _answer(send, 200, "application/json", body, self._cors(scope))

    def _cors(self, scope: Scope) -> list[tuple[bytes, bytes]]:
        """The CORS header of a simple request (the app's rule: any origin listed, no
        credentials)."""
        origin = dict(scope["headers"]).get(b"origin")
        origins = self.settings.cors_origins
        if origin is None:
            return []
        if "*" in origins:
            return [(b"access-control-allow-origin", b"*")]
        if origin.decode("latin-1") in origins:
            return [(b"access-control-allow-origin", origin), (b"vary", b"Origin")]
        return []

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def close(self) -> None:
        """Stop the workers, close the private store and the runtime, remove the folder."""
        if self._closed:
            return
        self._closed = True
        self.front.close()
        self.front.source.close()
        if self.runtime is not None:
            self.runtime.close()
        shutil.rmtree(self.front.workdir, ignore_errors=True)
        release_owner(self.front.owner)  # the folder gone: its lock no longer needed


async def _answer(send: Send, status: int, media: str, body: bytes,
                  extra: Sequence[tuple[bytes, bytes]]) -> None:
    headers: list[Any] = [(b"content-type", media.encode("latin-1")),
                          (b"content-length", str(len(body)).encode()), *extra, *HEADERS]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


__all__ = ["AppShell"]
