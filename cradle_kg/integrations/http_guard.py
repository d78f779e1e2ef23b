"""The strict JSON loader in front of an MCP endpoint on streamable HTTP.

The MCP SDK decodes a POST body with ``json.loads``: a body that is not UTF-8, nested
thousands of levels deep or holding a 5,000-digit number raises inside the SDK (HTTP 500,
``-32603 internal error``, a traceback in the server's log), and a key given twice is
resolved last-wins (``{"amount": 1, "amount": 5000}`` is a credit of 5,000 to the runtime
while anything that reads the first value sees 1). Every other entry point of cradle-kg
refuses such input with its strict loader (:func:`cradle_kg.inputs.load_json`), so this
middleware runs it over the body first: a refused body is a JSON-RPC parse error (HTTP
400, ``-32700``) or too large (HTTP 413), and the SDK sees only bodies the runtime would
accept. The body is read at most once and handed on unchanged.

Only requests that carry a bearer token are read here; the others go straight to the
endpoint, whose authentication answers 401 without reading the body.
"""

from __future__ import annotations

import json

from ..errors import InputError, InputTooLargeError
from ..inputs import InputLimits, load_json
from ..server.guard import ASGIApp, Receive, Scope, Send, replay_body

#: JSON-RPC error codes
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
#: the JSON-RPC envelope (``params``, ``_meta``) sits two levels above a proposal's values
ENVELOPE_LEVELS = 2


class StrictJsonBody:
    """ASGI middleware: a POST body the strict loader refuses never reaches ``app``."""

    def __init__(self, app: ASGIApp, limits: InputLimits) -> None:
        self.app = app
        self.limits = limits.model_copy(update={"max_depth": limits.max_depth
                                                + ENVELOPE_LEVELS})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" \
                or not _has_bearer(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message.get("type") == "http.disconnect":
                return  # the client left: nothing to answer, nothing to run
            body = bytes(message.get("body", b""))
            size += len(body)
            if size > self.limits.max_bytes:
                await _error(send, 413, INVALID_REQUEST,
                             f"request body: more than the limit of {self.limits.max_bytes} "
                             "bytes")
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        data = b"".join(chunks)
        try:
            load_json(data, limits=self.limits, source="request body")
        except InputTooLargeError as exc:
            await _error(send, 413, INVALID_REQUEST, exc.message)
            return
        except InputError as exc:
            await _error(send, 400, PARSE_ERROR, f"Parse error: {exc.message}")
            return
        await self.app(scope, replay_body(data, receive), send)


def _has_bearer(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            return bytes(value[:7]).lower() == b"bearer "
    return False


async def _error(send: Send, status: int, code: int, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": code, "message": message[:500]}},
                      ensure_ascii=True).encode("ascii")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode("ascii"))]})
    await send({"type": "http.response.body", "body": body})
