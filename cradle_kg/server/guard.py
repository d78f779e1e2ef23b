"""What every request passes before any route sees it: a body cap and security headers.

Both are plain ASGI middleware (no buffering of responses, nothing FastAPI-specific):

* :class:`BodyLimit` reads a request body *before* authentication and before any parser
  — up to the cap and no further. A declared ``Content-Length`` over the cap is refused
  without reading a byte; a chunked body is refused as soon as it passes the cap. Both
  answer 413 in one line of text. The route then reads the body from memory.
* :class:`SecurityHeaders` adds to every response: a ``Content-Security-Policy`` that
  allows only this origin's own scripts and styles (no inline code, no CDN, no framing),
  ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY`` and
  ``Referrer-Policy: no-referrer``. The approver token lives in the page's
  sessionStorage; nothing but this origin's own files may run beside it. An answer to a
  request that carries credentials (``Authorization``) is ``Cache-Control: no-store``:
  what a token read never stays in a browser's disk cache (``tests/security/test_228``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: the default request body cap (``cradle-kg serve --max-body-bytes``)
MAX_BODY_BYTES: Final = 1_048_576

CSP: Final = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
              "font-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; "
              "frame-ancestors 'none'")
HEADERS: Final = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)
#: on an answer to a request with credentials: what a token read is not kept in a cache
NO_STORE: Final = (b"cache-control", b"no-store")


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


#: request bodies one server process holds at once, in bytes, beyond which a body is refused
#: (503, "send it again"): at least four of the largest allowed (``tests/security/test_50``)
BODY_BUDGET_BYTES: Final = 64 * 1_048_576
BUSY: Final = "the server holds too many request bodies at the moment: send it again shortly"


class BodyBudget:
    """The request bodies a process holds at once, across its connections (one event loop).

    The body cap bounds one request; this bounds them all: from one client, 300
    connections that each sent a 1 MiB body but its last byte made the query workers hold
    ~1 MB each for as long as the connections stayed (~3 GB for 3,000). A body that would
    take the total past ``limit`` is refused (503 with ``Retry-After``), and what the
    process holds stays under ``limit`` plus the connections' socket buffers."""

    def __init__(self, limit: int = BODY_BUDGET_BYTES, *, largest: int = 0) -> None:
        self.limit = max(limit, 4 * largest)
        self.held = 0

    def take(self, n: int) -> bool:
        if self.held + n > self.limit:
            return False
        self.held += n
        return True

    def give(self, n: int) -> None:
        self.held -= n


#: why :func:`held_body` holds no body
TOO_LARGE: Final = "too_large"
BUSY_NOW: Final = "busy"
GONE: Final = "gone"


@dataclass
class HeldBody:
    body: bytes = b""
    #: None, or :data:`TOO_LARGE` (past ``max_bytes``), :data:`BUSY_NOW` (no room in the
    #: budget), :data:`GONE` (the client left)
    refused: str | None = None


@contextlib.asynccontextmanager
async def held_body(receive: Receive, *, max_bytes: int,
                    budget: BodyBudget) -> AsyncIterator[HeldBody]:
    """A request's body read whole — refused as it arrives past ``max_bytes`` or past the
    process's ``budget`` — and held (counted in the budget) until the block ends: what
    every server reads ahead of its app (:class:`BodyLimit`, ``mcp serve``'s strict JSON
    reader) reads through this."""
    held = HeldBody()
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                held.refused = GONE
                break
            chunk = bytes(message.get("body", b""))
            if size + len(chunk) > max_bytes:
                held.refused = TOO_LARGE
                break
            if not budget.take(len(chunk)):
                held.refused = BUSY_NOW
                break
            size += len(chunk)
            chunks.append(chunk)
            if not message.get("more_body", False):
                held.body = b"".join(chunks)
                break
        chunks.clear()
        yield held
    finally:
        budget.give(size)


async def busy(send: Send) -> None:
    """The 503 of a body the :class:`BodyBudget` has no room for."""
    body = (BUSY + "\n").encode()
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"retry-after", b"1"),
        (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Refuse (413) a request body over ``max_bytes`` before the app reads any of it, and
    (503) one the process's :class:`BodyBudget` has no room for."""

    def __init__(self, app: ASGIApp, *, max_bytes: int = MAX_BODY_BYTES,
                 budget: BodyBudget | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.budget = budget or BodyBudget(largest=max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = f"the request body is over the {self.max_bytes} byte cap"
        declared = [v for k, v in scope.get("headers", []) if k == b"content-length"]
        if declared:
            try:
                sizes = {int(v) for v in declared}
            except ValueError:
                await _plain(send, 400, "the content-length header is not a number")
                return
            if len(sizes) != 1 or max(sizes) < 0:
                await _plain(send, 400, "the content-length header is inconsistent")
                return
            if max(sizes) > self.max_bytes:
                await _plain(send, 413, too_large)
                return
        async with held_body(receive, max_bytes=self.max_bytes, budget=self.budget) as held:
            if held.refused == TOO_LARGE:
                await _plain(send, 413, too_large)
            elif held.refused == BUSY_NOW:
                await busy(send)
            elif held.refused is None:
                await self.app(scope, replay_body(held.body, receive), send)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """An ASGI ``receive`` that gives a body read ahead once, then what the client sends
    next (its disconnect): for a middleware that had to read the body before the app."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the disconnect

    return replay


class SecurityHeaders:
    """Add the security headers to every HTTP response (a route's own value wins)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        credentials = any(k.lower() == b"authorization" for k, _ in scope.get("headers", ()))

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in HEADERS if k not in present]
                if credentials and b"cache-control" not in present:
                    headers.append(NO_STORE)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


__all__ = ["BODY_BUDGET_BYTES", "BUSY_NOW", "CSP", "GONE", "MAX_BODY_BYTES", "TOO_LARGE",
           "BodyBudget", "BodyLimit", "HeldBody", "SecurityHeaders", "busy", "held_body"]
