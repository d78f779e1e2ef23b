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
  sessionStorage; nothing but this origin's own files may run beside it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
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


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Refuse (413) a request body over ``max_bytes`` before the app reads any of it."""

    def __init__(self, app: ASGIApp, *, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

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
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _plain(send, 413, too_large)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, replay_body(b"".join(chunks), receive), send)


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

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in HEADERS if k not in present]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


__all__ = ["CSP", "MAX_BODY_BYTES", "BodyLimit", "SecurityHeaders"]
