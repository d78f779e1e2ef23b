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

It runs inside the gateway's token check (:func:`.mcp_server.http_app`): a request whose
token is not an agent's is answered 401 before, its body never read — the strict loader
parses a MiB in some tenths of a second on the event loop, which anyone saying ``Bearer
nope`` had it do before (``test_268``). A request that is no ``POST`` carries no body:
one that declares a body is a 413, its body never read (the SDK reads any request's body
whole before it looks at the method: ``test_266``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, InputTooLargeError
from ..inputs import InputLimits, load_json
from ..server.guard import (
    BUSY_NOW,
    TOO_LARGE,
    ASGIApp,
    BodyBudget,
    Message,
    Receive,
    Scope,
    Send,
    busy,
    held_body,
    replay_body,
)

#: JSON-RPC error codes
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
#: the JSON-RPC envelope (``params``, ``_meta``) sits two levels above a proposal's values
ENVELOPE_LEVELS = 2


def envelope_limits(limits: InputLimits) -> InputLimits:
    """The limits of a whole JSON-RPC message: a proposal's, two levels deeper."""
    return limits.model_copy(update={"max_depth": limits.max_depth + ENVELOPE_LEVELS})


def refusal(data: bytes, limits: InputLimits, *, source: str = "request body"
            ) -> tuple[int, int, str] | None:
    """Why the strict loader refuses one JSON-RPC message — (HTTP status, JSON-RPC code,
    message) — or None. What every MCP transport asks before the SDK reads a message."""
    return read_message(data, limits, source=source)[0]


def read_message(data: bytes, limits: InputLimits, *, source: str = "request body"
                 ) -> tuple[tuple[int, int, str] | None, Any]:
    """:func:`refusal`, and the message as the strict loader read it (None when refused)."""
    if len(data) > limits.max_bytes:
        return refused_size(limits, source=source), None
    try:
        return None, load_json(data, limits=limits, source=source)
    except InputTooLargeError as exc:
        return (413, INVALID_REQUEST, exc.message), None
    except InputError as exc:
        return (400, PARSE_ERROR, f"Parse error: {exc.message}"), None


def envelope_problem(message: Any) -> tuple[str, list[int | str | None]] | None:
    """Why a message the strict loader read is no JSON-RPC 2.0 message MCP's SDK reads, and
    the ids to answer that under (each request's of a batch; ``None`` when none can be
    read) — or None. The SDK answers such a line with a log notification and never the
    request, whose sender then waits for ever (``tests/security/test_227``)."""
    if isinstance(message, list):
        ids = [m["id"] for m in message if isinstance(m, dict) and _plain_id(m.get("id"))]
        return ("a batch (a JSON array of messages) is not served: one message a line, "
                "as MCP 2025-06-18 has it", ids or [None])
    if not isinstance(message, dict):
        return "a JSON-RPC message is a JSON object", [None]
    if "method" not in message:  # a response (or nothing): never answered, as before
        return None
    if (problem := id_problem(message)) is not None:
        return problem, [None]
    if message.get("jsonrpc") != "2.0":
        return "`jsonrpc`: must be `2.0`", [message.get("id")]
    return None


def id_problem(message: Any) -> str | None:
    """Why a JSON-RPC request's ``id`` is none a request may have (an object, ``null``, a
    boolean), or None (a response is left alone: a response is never answered). On
    streamable HTTP the SDK took such a request for a notification: ``202 Accepted``,
    never answered (``tests/security/test_227``); the other shapes
    :func:`envelope_problem` names it answers ``400`` itself."""
    if isinstance(message, dict) and "method" in message and "id" in message \
            and not _plain_id(message["id"]):
        return "`id`: a request's id is a string or an integer"
    return None


def _plain_id(rid: Any) -> bool:
    return isinstance(rid, int | str) and not isinstance(rid, bool)


def error_message(code: int, message: str, request_id: int | str | None = None) -> bytes:
    """A JSON-RPC error, for ``request_id`` (none: the message that caused it was not read;
    on HTTP the response itself answers the request)."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id,
                       "error": {"code": code, "message": message[:500]}},
                      ensure_ascii=True).encode("ascii")


def request_id(data: bytes) -> int | str | None:
    """The id of a refused message, read leniently so its sender gets its answer (on
    stdio the error is matched by id); None when it cannot be read."""
    try:
        message = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None
    rid = message.get("id") if isinstance(message, dict) else None
    return rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None


#: a body past this many bytes is parsed off the event loop (:meth:`StrictJsonBody.read`)
PARSE_INLINE_BYTES = 64 * 1024
#: bodies parsed at once off the event loop, by one process
PARSING_AT_ONCE = 2


class StrictJsonBody:
    """ASGI middleware: a POST body the strict loader refuses never reaches ``app``."""

    def __init__(self, app: ASGIApp, limits: InputLimits) -> None:
        self.app = app
        self.limits = envelope_limits(limits)
        #: the bodies this process holds at once
        self.budget = BodyBudget(largest=self.limits.max_bytes)
        self._parsing: Any = None  # an anyio.CapacityLimiter, made on the event loop

    async def read(self, body: bytes) -> tuple[tuple[int, int, str] | None, Any]:
        """:func:`read_message` of ``body``: past :data:`PARSE_INLINE_BYTES`, on a worker
        thread of this middleware's own (:data:`PARSING_AT_ONCE` at once, not the threads
        the calls run on): the strict loader parses a MiB in some tenths of a second, and
        on the event loop no other request was served meanwhile (``test_269``)."""
        if len(body) <= PARSE_INLINE_BYTES:
            return read_message(body, self.limits)
        import anyio.to_thread

        if self._parsing is None:
            self._parsing = anyio.CapacityLimiter(PARSING_AT_ONCE)
        return await anyio.to_thread.run_sync(read_message, body, self.limits,
                                              limiter=self._parsing)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http" and scope.get("method") != "POST" and _has_body(scope):
            # the SDK reads any request's body whole, outside the budget (test_266)
            await _error(send, 413, INVALID_REQUEST,
                         f"a {scope.get('method')} request to the MCP endpoint carries no body",
                         close=True)
            return
        if scope.get("type") != "http" or scope.get("method") != "POST" \
                or not _has_bearer(scope):
            await self.app(scope, receive, send)
            return
        async with held_body(receive, max_bytes=self.limits.max_bytes,
                             budget=self.budget) as held:
            if held.refused == TOO_LARGE:  # refused as it arrives, never all read
                await _error(send, *refused_size(self.limits))
                return
            if held.refused == BUSY_NOW:
                await busy(send)
                return
            if held.refused is not None:
                return  # the client left: nothing to answer, nothing to run
            refused, message = await self.read(held.body)
            if refused is not None:
                await _error(send, *refused)
                return
            problem = id_problem(message)
            if problem is not None:  # a request the SDK would take for a notification
                await _error(send, 400, INVALID_REQUEST, f"Invalid request: {problem}")
                return
            await self.app(scope, replay_body(held.body, receive), send)


def refused_size(limits: InputLimits, *, source: str = "request body") -> tuple[int, int, str]:
    """The refusal of a message that grows past ``max_bytes`` (before it is all read)."""
    return 413, INVALID_REQUEST, f"{source}: more than the limit of {limits.max_bytes} bytes"


def _has_bearer(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            return bytes(value[:7]).lower() == b"bearer "
    return False


def _has_body(scope: Scope) -> bool:
    """Whether a request declares a body (``Content-Length`` above 0, or any
    ``Transfer-Encoding``): without either, HTTP/1.1 gives it none."""
    for name, value in scope.get("headers", ()):
        key = bytes(name).lower()
        if key == b"transfer-encoding" or (key == b"content-length"
                                           and bytes(value).strip() not in (b"0", b"")):
            return True
    return False


async def _error(send: Send, status: int, code: int, message: str, *,
                 close: bool = False) -> None:
    body = error_message(code, message)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode("ascii")),
                            *([(b"connection", b"close")] if close else [])]})
    await send({"type": "http.response.body", "body": body})


#: open MCP sessions an agent may hold at once on one ``mcp serve`` / ``mcp proxy`` over HTTP
MAX_SESSIONS_PER_AGENT = 32
#: after how long without a request an MCP session is closed (the SDK's idle timeout, set
#: explicitly where the SDK has one, so that the quota counts the same sessions)
SESSION_IDLE_SECONDS = 30 * 60.0
_SESSION_HEADER = b"mcp-session-id"


@dataclass
class _Session:
    agent: str
    last: float
    #: its requests under way (an open stream keeps a session alive however long it lasts)
    running: int = 0


class SessionQuota:
    """ASGI middleware, inside the bearer check: each agent holds at most ``limit`` open MCP
    sessions; the request that would open one more is refused (HTTP 429, a JSON-RPC
    error naming the limit and how to close a session) and opens nothing.

    Without it one agent's token opened sessions until the SDK's global cap (10,000 in
    SDK 1.30; none before): ~60 KB each, and every other agent was then refused for the
    sessions' idle time (``tests/security/test_48_mcp_session_quota.py``). Sessions are
    counted here, from the responses: one is open from the response that names its
    ``mcp-session-id`` until it answers a ``DELETE`` or a 404 (ended), or has had no
    request for ``idle`` seconds (the SDK has closed it; ``None``: it lives until it is
    deleted). A session opening is counted from its request, so that concurrent openings
    cannot pass the limit together."""

    def __init__(self, app: ASGIApp, *, limit: int = MAX_SESSIONS_PER_AGENT,
                 idle: float | None = SESSION_IDLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.limit = limit
        self.idle = idle
        self.clock = clock
        self.sessions: dict[str, _Session] = {}
        self.opening: dict[str, int] = {}

    def held(self, agent: str) -> int:
        """The open sessions of ``agent``, and its openings under way (forgets the ended)."""
        now = self.clock()
        if self.idle is not None:
            for sid in [sid for sid, s in self.sessions.items()
                        if s.running == 0 and now - s.last > self.idle]:
                del self.sessions[sid]
        return sum(1 for s in self.sessions.values() if s.agent == agent) \
            + self.opening.get(agent, 0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user") if scope.get("type") == "http" else None
        agent = getattr(user, "username", None) if user is not None else None
        if not isinstance(agent, str) or not agent:
            await self.app(scope, receive, send)
            return
        sid = _header(scope, _SESSION_HEADER)
        if sid is None:
            await self._open(agent, scope, receive, send)
            return
        session = self.sessions.get(sid)
        if session is None or session.agent != agent:  # not ours to count: the SDK answers
            await self.app(scope, receive, send)
            return
        session.running += 1
        session.last = self.clock()
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            session.running -= 1
            session.last = self.clock()
            if status == 404 or (scope.get("method") == "DELETE" and 200 <= status < 300):
                self.sessions.pop(sid, None)

    async def _open(self, agent: str, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST":  # no session is opened but by a POST
            await self.app(scope, receive, send)
            return
        if self.held(agent) >= self.limit:
            ends = f"; an idle session ends after {self.idle:g} s" if self.idle else ""
            await _error(send, 429, INVALID_REQUEST, (
                f"`{agent}` already holds {self.limit} open MCP sessions (the limit of "
                "`--max-sessions-per-agent`): reuse one, or close one (an HTTP DELETE "
                f"with its `mcp-session-id`){ends}"))
            return
        self.opening[agent] = self.opening.get(agent, 0) + 1
        opened: list[str] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and int(message["status"]) < 300:
                for name, value in message.get("headers", ()):
                    if bytes(name).lower() == _SESSION_HEADER:
                        opened.append(bytes(value).decode("latin-1"))
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self.opening[agent] -= 1
            if not self.opening[agent]:
                del self.opening[agent]
            for sid in opened:
                self.sessions[sid] = _Session(agent, self.clock())


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None
