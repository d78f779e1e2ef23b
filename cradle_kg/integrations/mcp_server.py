"""``cradle-kg mcp serve``: the home's tools over the Model Context Protocol, governed.

Any MCP client (Claude Desktop and Claude Code, the OpenAI Agents SDK, LangGraph through
``langchain-mcp-adapters``, IDE agents) lists the registered tools — name, description,
input and output JSON Schema from the tool's models, annotations from its side-effect
class — and every ``tools/call`` becomes a proposal through both gates
(:mod:`cradle_kg.integrations.calls`).

Identity never comes from the call: on stdio it is ``--agent`` (a configured agent); on
streamable HTTP it is the bearer token ``cradle-kg api-token issue`` printed (no valid
token: 401; a session stays bound to the token that opened it). One run per MCP session.

Built on the SDK's low-level ``Server`` (``mcp.server.lowlevel``): the tool list and the
results are ours to shape (``structuredContent``, ``isError``, ``_meta``), and a malformed
request or an unknown tool is a JSON-RPC error, never a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import stat
import sys
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import InputError, QuotaExceededError
from ..inputs import CappedLines, InputLimits
from ..server.threads import CALLS_PER_IDENTITY, IdentityThreads
from . import require
from .calls import (
    META_PREFIX,
    CallResult,
    GovernedSession,
    HostMeta,
    check_host_only,
    host_meta,
    refused,
    tool_hints,
)
from .http_guard import (
    INVALID_REQUEST,
    MAX_SESSIONS_PER_AGENT,
    SESSION_IDLE_SECONDS,
    SessionQuota,
    StrictJsonBody,
    envelope_limits,
    envelope_problem,
    error_message,
    read_message,
    refused_size,
    request_id,
)

if TYPE_CHECKING:
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.session import ServerSession
    from starlette.applications import Starlette

    from ..loop.runtime import Runtime
    from ..tools import ToolSpec

T = TypeVar("T")

#: the scope a cradle-kg agent token carries for the MCP endpoint
AGENT_SCOPE = "cradle-kg:agent"
#: a token the host application holds for its agent (``api-token issue --host``): its calls
#: may carry the host's trusted ``_meta`` keys (:data:`HOST_ONLY_KEYS`)
HOST_SCOPE = "cradle-kg:host"
#: seconds between two polls of the journal while a call waits for an approver
POLL_SECONDS = 0.25

#: who is calling: the identity of the current request (stdio: fixed; HTTP: the token's)
IdentityFn = Callable[[], str | None]


#: an agent's calls that run at once on one MCP server (its next waits for one of them)
CALLS_PER_AGENT = CALLS_PER_IDENTITY
#: an agent's calls that wait for an approver at once on one MCP server (``--approval-wait``);
#: its next is answered ``awaiting_approval`` at once (``tests/security/test_367``)
WAITS_PER_AGENT = 16


class SessionBook:
    """One :class:`GovernedSession` per MCP session (and so one run per session)."""

    def __init__(self, runtime: Runtime, *, origin: str = "mcp", home_hint: str = "") -> None:
        self.runtime = runtime
        self.origin = origin
        self.home_hint = home_hint
        self._sessions: weakref.WeakKeyDictionary[Any, GovernedSession] = (
            weakref.WeakKeyDictionary())
        self._threads = IdentityThreads(CALLS_PER_AGENT)
        self._waits: dict[str, int] = {}  # agent -> its calls waiting for an approver

    @contextlib.contextmanager
    def waiting(self, agent_id: str) -> Iterator[bool]:
        """Count one of ``agent_id``'s calls as waiting for an approver for the block:
        True, or False (nothing counted) when :data:`WAITS_PER_AGENT` of its calls wait
        already. Entered on the event loop only (one thread: the count needs no lock).

        INVARIANT: the waits of one agent are bounded: each polls the journal four times a
        second on the shared worker pool and holds its connection, and one pending approval
        answers every call of its key (``test_236``) — before, 1,500 waits of one agent
        made another's read fifteen times slower (``tests/security/test_367``)."""
        held = self._waits.get(agent_id, 0)
        if held >= WAITS_PER_AGENT:
            yield False
            return
        self._waits[agent_id] = held + 1
        try:
            yield True
        finally:
            left = self._waits[agent_id] - 1
            if left:
                self._waits[agent_id] = left
            else:
                del self._waits[agent_id]

    async def run(self, agent_id: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the worker threads of ``agent_id``'s calls:
        :data:`CALLS_PER_AGENT` at once, its own — not the pool every call of the process
        shares (anyio's 40), which one agent's slow calls took whole: every other agent's
        call waited on them (``tests/security/test_270``; :mod:`cradle_kg.server.threads`,
        which ``serve``'s JSON API shares); refused past the calls that may wait
        (:meth:`~cradle_kg.server.threads.IdentityThreads.admitted`, ``test_280``)."""
        return await self._threads.run(agent_id, fn, *args)

    def session(self, key: Any, agent_id: str) -> GovernedSession:
        held = self._sessions.get(key)
        if held is None:
            held = GovernedSession(self.runtime, agent_id, origin=self.origin,
                                   home_hint=self.home_hint)
            self._sessions[key] = held
        elif held.agent_id != agent_id:  # INVARIANT: a session keeps the identity it opened with
            raise InputError(f"this session belongs to `{held.agent_id}`, not `{agent_id}`")
        return held


def tool_entry(spec: ToolSpec, *, name: str | None = None) -> types.Tool:
    """The MCP description of a registered tool."""
    from mcp import types

    return types.Tool(
        name=name or spec.id, title=spec.id,
        description=spec.description or f"the governed tool `{spec.id}`",
        inputSchema=spec.input_model.model_json_schema(),
        outputSchema=spec.output_model.model_json_schema(),
        annotations=types.ToolAnnotations(title=spec.id, **tool_hints(spec)))


def as_mcp_result(result: CallResult) -> types.CallToolResult:
    from mcp import types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.text)],
        structuredContent=result.structured, isError=result.is_error,
        _meta=result.meta)


def build_server(runtime: Runtime, identity: IdentityFn, *, approval_wait: float = 0.0,
                 home_hint: str = "", name: str = "cradle-kg",
                 only: Collection[str] | None = None,
                 host_trusted: Callable[[], bool] = lambda: True,
                 still_valid: Callable[[], bool] = lambda: True) -> Server[Any, Any]:
    """The MCP server of a runtime: its tools (``only`` these, when given), each call
    governed. ``host_trusted``: whether the caller is the host application, whose
    ``_meta`` may assert facts and the user's input — on stdio always (the host started
    the server and holds its pipes), on HTTP only with a host's token. ``still_valid``:
    whether the credentials the current request came with still authenticate its caller
    (asked, in a worker thread, at each poll of a call waiting for an approver)."""
    require("mcp", extra="mcp")
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import McpError

    from .. import __version__

    server: Server[Any, Any] = Server(name, version=__version__, instructions=(
        "Every call is a proposal: the cradle-kg runtime checks it (identity, permissions, "
        "policies, approvals), runs it, and verifies its effect. A refused call says why."))
    book = SessionBook(runtime, home_hint=home_hint)

    @server.list_tools()  # type: ignore[untyped-decorator, no-untyped-call]
    async def _list() -> list[types.Tool]:
        return [tool_entry(spec) for spec in runtime.tools.specs()
                if only is None or spec.id in only]

    async def _call(req: types.CallToolRequest) -> types.ServerResult:
        ctx = server.request_context
        if not runtime.tools.has(req.params.name) or (only is not None
                                                      and req.params.name not in only):
            raise McpError(types.ErrorData(code=types.INVALID_PARAMS,
                                           message=f"unknown tool `{req.params.name[:200]}`"))
        agent = identity()
        if agent is None:  # fail closed: no identity, no call
            raise McpError(types.ErrorData(code=types.INVALID_REQUEST,
                                           message="no authenticated identity"))
        result = await governed_call(book, ctx.session, agent, req, ctx.request_id,
                                     approval_wait=approval_wait, host=host_trusted(),
                                     still_valid=still_valid)
        return types.ServerResult(as_mcp_result(result))

    server.request_handlers[types.CallToolRequest] = _call
    return server


async def governed_call(book: SessionBook, key: ServerSession, agent: str,
                        req: types.CallToolRequest, request_id: Any, *,
                        approval_wait: float, host: bool = True,
                        still_valid: Callable[[], bool] = lambda: True) -> CallResult:
    """Run one ``tools/call`` through the runtime (in a worker thread); wait for an
    approver, with progress notifications, when the client asked for progress. ``host``:
    the caller is the host application (see :func:`build_server`)."""
    name = req.params.name
    given = req.params.meta
    # the host's keys are the meta's extra fields (the SDK's model allows them)
    extra = (given.model_dump(exclude={"progressToken"}) if given is not None
             and given.model_extra else {})
    try:
        session = book.session(key, agent)
        meta = host_meta(extra, book.runtime)
        if not host:
            check_host_only(meta)
    except InputError as exc:
        return refused(exc, {"tool": name})
    try:
        result = await book.run(agent, _call_in_thread, session, name,
                                req.params.arguments or {}, meta, still_valid)
    except QuotaExceededError as exc:  # its calls running and waiting: none more taken
        return refused(exc, {"tool": name})
    token = req.params.meta.progressToken if req.params.meta else None
    if result.status != "awaiting_approval" or approval_wait <= 0 or token is None:
        return result
    with book.waiting(agent) as admitted:
        if not admitted:  # as with no wait: the key's next call reads the outcome
            return result
        return await _await_decision(session, key, result, name, token, request_id,
                                     wait=approval_wait, still_valid=still_valid)


def _call_in_thread(session: GovernedSession, name: str, arguments: Any,
                    meta: HostMeta, still_valid: Callable[[], bool]) -> CallResult:
    # INVARIANT: a call that waited for one of its agent's threads runs only while the
    # credentials it came with still authenticate its agent, as a call waiting for an
    # approver (test_229): before, 64 calls queued behind 8 slow ones each ran once a
    # thread was free, their token revoked meanwhile (tests/security/test_502)
    if not still_valid():
        return refused(InputError(
            f"the credentials this call came with no longer authenticate "
            f"`{session.agent_id}` (revoked or removed while it waited for a thread): "
            "nothing is run for it"), {"tool": name})
    return session.call(name, arguments, meta)


async def _await_decision(session: GovernedSession, key: ServerSession, result: CallResult,
                          name: str, token: str | int, request_id: Any, *,
                          wait: float, still_valid: Callable[[], bool] = lambda: True
                          ) -> CallResult:
    """Poll the journal until an approver ends the wait (or ``wait`` seconds pass).

    INVARIANT: an approved call goes on here (:meth:`GovernedSession.latest` runs it) only
    while the credentials the call came with still authenticate its agent: a token revoked
    (or an agent removed) during the wait ends it with a refusal, and nothing is run for it
    (``tests/security/test_229``)."""
    import anyio

    approval = result.approval_id or ""
    waited, beat = 0.0, 0
    with anyio.move_on_after(wait):
        while True:
            beat += 1
            await key.send_progress_notification(
                token, progress=beat, message=f"awaiting approval `{approval}`",
                related_request_id=request_id)
            await anyio.sleep(POLL_SECONDS)
            waited += POLL_SECONDS
            if not await anyio.to_thread.run_sync(still_valid):
                return refused(InputError(
                    f"the credentials this call came with no longer authenticate "
                    f"`{session.agent_id}` (revoked or removed while it waited): the wait "
                    f"ends and nothing is run for it; approval `{approval}` stays as "
                    "decided"), {"run": result.meta.get(META_PREFIX + "run"),
                                 "proposal": result.meta.get(META_PREFIX + "proposal")})
            latest = await anyio.to_thread.run_sync(session.latest, result, name)
            if latest.status != "awaiting_approval":
                await key.send_progress_notification(
                    token, progress=beat + 1, total=beat + 1,
                    message=f"approval `{approval}` decided: {latest.status}",
                    related_request_id=request_id)
                return latest
    return result


async def serve_stdio(runtime: Runtime, agent_id: str, *, approval_wait: float = 0.0,
                      home_hint: str = "", only: Collection[str] | None = None,
                      name: str = "cradle-kg") -> None:
    """Serve on stdin/stdout as ``agent_id`` (checked against the configuration first)."""
    require("mcp", extra="mcp")
    from mcp.server.stdio import stdio_server

    GovernedSession(runtime, agent_id)  # refuses an undeclared agent before anything starts
    server = build_server(runtime, lambda: agent_id, approval_wait=approval_wait,
                          home_hint=home_hint, only=only, name=name,
                          still_valid=lambda: agent_id in runtime.declared_agents())
    async with pipe_stdio(runtime.config.input_limits) as (stdin, stdout):
        if isinstance(stdout, _PipeWriter):  # a pipe, written on the event loop
            from .mcp_streams import LineReceiveStream, LineSendStream

            # the session reads and writes the pipes itself: no relay task, no memory
            # stream between them and it (the SDK's `stdio_server` runs two)
            await server.run(LineReceiveStream(stdin.__aiter__()),  # type: ignore[arg-type]
                             LineSendStream(stdout.line),  # type: ignore[arg-type]
                             server.create_initialization_options())
            return
        async with stdio_server(stdin, stdout) as (read, write):
            await server.run(read, write, server.create_initialization_options())


class _StdinLines:
    """stdin as the SDK's ``stdio_server`` reads it (an async iterator of text lines), from
    ``read`` — one chunk of bytes at a time, ``b""`` at the end: whatever stdin is, a pipe
    read on the event loop or a regular file or a terminal read in a worker thread
    (:func:`pipe_stdio`). A line ends at ``\\n`` (MCP's stdio framing; a ``\\r`` before it
    is JSON whitespace).

    With ``limits``, every line goes through the strict loader first, as an HTTP body does
    (:func:`.http_guard.refusal`): a key given twice, bytes that are not UTF-8, runaway
    nesting or a line past ``max_bytes`` never reach the SDK — ``reply`` answers a JSON-RPC
    error instead, under the message's id when it can be read — and a line past
    ``max_bytes`` is dropped as it arrives, not buffered."""

    def __init__(self, read: Callable[[], Awaitable[bytes]],
                 limits: InputLimits | None = None,
                 reply: Callable[[bytes], Awaitable[None]] | None = None) -> None:
        self.read = read
        self.limits = envelope_limits(limits) if limits is not None else None
        self.reply = reply

    async def __aiter__(self) -> AsyncIterator[str]:
        cap = self.limits.max_bytes if self.limits is not None else None
        async for line in capped_lines(self.read, cap):
            if line is None:  # a line past the limit, dropped: answered once it ended
                assert self.limits is not None
                await self._refuse(refused_size(self.limits, source="message"))
                continue
            ended = line.endswith(b"\n")
            text = await self._line(line[:-1] if ended else line)
            if text is not None:
                yield text + "\n" if ended else text  # the last, unended: as the SDK's

    async def _line(self, line: bytes) -> str | None:
        """The line for the SDK, or None when it was refused (and answered)."""
        if self.limits is not None and line.strip():
            refused, message = read_message(line, self.limits, source="message")
            if refused is not None:
                await self._refuse(refused, request_id(line))
                return None
            problem = envelope_problem(message)
            if problem is not None:  # JSON, but no message: answered here, or never
                said, ids = problem
                for rid in ids:
                    await self._refuse((400, INVALID_REQUEST, f"Invalid request: {said}"),
                                       rid)
                return None
        return line.decode("utf-8", errors="replace")  # as the SDK's TextIOWrapper decodes

    async def _refuse(self, refused: tuple[int, int, str],
                      rid: int | str | None = None) -> None:
        _, code, message = refused
        if self.reply is not None:
            await self.reply(error_message(code, message, rid) + b"\n")


class _PipeWriter:
    """stdout as the SDK's ``stdio_server`` writes it (``write``, then ``flush``), written on
    the event loop to a non-blocking pipe: ``flush`` waits while the pipe is full."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def line(self, data: bytes) -> None:
        """One whole line of our own (a refusal), between the SDK's messages."""
        self.writer.write(data)
        await self.writer.drain()

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


#: bytes read from stdin at a time (a longer line is joined from several reads)
_CHUNK = 1 << 16


async def capped_lines(read: Callable[[], Awaitable[bytes]], cap: int | None,
                       overflow: Callable[[], Awaitable[None]] | None = None
                       ) -> AsyncIterator[bytes | None]:
    """The ``\\n``-ended lines of a byte stream (``read`` answers ``b""`` at its end), each
    with its ``\\n``; the last one even without an end (and so without). A line that grows
    past ``cap`` bytes is dropped as it arrives, never buffered: ``overflow`` is awaited
    the moment it passes the cap, and the line is ``None`` once its end has arrived (none
    at the end of the stream). ``mcp serve``'s stdin (:class:`_StdinLines`) is read here;
    the proxy's upstream's stdout (:mod:`.upstream_stdio`, in a thread) by the same
    :class:`~cradle_kg.inputs.CappedLines`.

    A line that ends in the same read that takes it past ``cap`` is yielded whole (at most
    one read longer): its reader checks the length, as the strict loader does."""
    lines = CappedLines(cap)
    while chunk := await read():
        ended, passed = lines.feed(chunk)
        for line in ended:
            yield line
        if passed and overflow is not None:
            await overflow()
    if last := lines.rest():  # a line past the cap at the end: nothing more to answer
        yield last


def _mode(fd: int) -> os.stat_result | None:
    try:
        return os.fstat(fd)
    except OSError:
        return None


@contextlib.asynccontextmanager
async def pipe_stdio(limits: InputLimits | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """stdin and stdout for the SDK's ``stdio_server``.

    stdin, whatever it is, is read by :class:`_StdinLines` — the strict loader and the
    cap on a line's length (``tests/security/test_31``, ``test_45``): on asyncio under
    POSIX a pipe or a socket is read on the event loop (the SDK's own reader wraps stdin in
    ``anyio.wrap_file``, which hands every line read, every write and every flush to a
    worker thread: three thread hand-offs a call, about 0.3 ms); anything else — a regular
    file (``mcp serve < requests.jsonl``), a terminal, another backend (trio) — by plain
    reads in a worker thread (:func:`_read_in_thread`), as the SDK's reader reads it.

    stdout is written on the event loop when it is a pipe (on a socket, asyncio's write
    transport would take the peer's writes for a close); ``None`` otherwise (the SDK's
    own). The pipe or socket of each is a duplicate of fd 0 or 1 (closing it leaves those
    open), non-blocking for the serve, blocking again after it."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:  # another backend (trio)
        loop = None
    given, taken = _mode(0), _mode(1)
    posix = loop is not None and sys.platform != "win32"
    same = given is not None and taken is not None and (
        (given.st_dev, given.st_ino) == (taken.st_dev, taken.st_ino))
    read_pipe = posix and given is not None and (stat.S_ISFIFO(given.st_mode)
                                                 or stat.S_ISSOCK(given.st_mode))
    write_pipe = posix and taken is not None and stat.S_ISFIFO(taken.st_mode) and not same
    async with contextlib.AsyncExitStack() as stack:
        stdout = None
        read: Callable[[], Awaitable[bytes]] = _read_in_thread
        if write_pipe:
            assert loop is not None
            sys.stdout.flush()
            stack.callback(os.set_blocking, 1, os.get_blocking(1))
            write_transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, os.fdopen(os.dup(1), "wb", 0))
            stack.callback(write_transport.close)
            writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
            stack.push_async_callback(_drained, writer)
            stdout = _PipeWriter(writer)
        if read_pipe:
            assert loop is not None
            stack.callback(os.set_blocking, 0, os.get_blocking(0))
            reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
            read_transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
                os.fdopen(os.dup(0), "rb", 0))
            stack.callback(read_transport.close)
            read = partial(reader.read, _CHUNK)
        stdin = _StdinLines(read, limits, stdout.line if stdout is not None
                            else _blocking_line)
        yield stdin, stdout


async def _read_in_thread() -> bytes:
    """One read of stdin (fd 0) that is not a pipe on the event loop — a regular file, a
    terminal — in a worker thread (a file is never "not ready"; a terminal blocks until a
    line is typed): up to :data:`_CHUNK` bytes, ``b""`` at its end."""
    import anyio

    return await anyio.to_thread.run_sync(os.read, 0, _CHUNK)


async def _blocking_line(data: bytes) -> None:
    """A refusal written to stdout when the SDK writes it (not a pipe): one whole line,
    flushed, under the buffer's lock as the SDK's own writes are."""
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


async def _drained(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):  # the client may have left: nothing to flush to
        await writer.drain()


def http_app(runtime: Runtime, *, approval_wait: float = 0.0, home_hint: str = "",
             path: str = "/mcp", only: Collection[str] | None = None,
             name: str = "cradle-kg",
             max_sessions_per_agent: int = MAX_SESSIONS_PER_AGENT) -> Starlette:
    """Streamable HTTP at ``path``, behind the agents' bearer tokens (401 without one, the
    body unread); a body then read by the strict JSON loader (:class:`StrictJsonBody`);
    each agent holds at most ``max_sessions_per_agent`` open sessions (:class:`SessionQuota`)."""
    require("mcp", extra="mcp")
    from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
    from mcp.server.lowlevel.server import request_ctx
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.authentication import AuthenticationMiddleware
    from starlette.routing import Route

    def current() -> Any:
        """The token of the HTTP request that carries the message being handled (None:
        none). INVARIANT: never the SDK's ``get_access_token()``, which a session's tasks
        read from the request that *opened* the session: every call was judged by the
        token of its ``initialize`` (``tests/security/test_265``)."""
        ctx = request_ctx.get(None)
        scope = getattr(getattr(ctx, "request", None), "scope", None)
        user = scope.get("user") if isinstance(scope, dict) else None
        return getattr(user, "access_token", None)

    def identity() -> str | None:
        token = current()
        return str(token.client_id) if token is not None else None

    def host_trusted() -> bool:
        token = current()
        return token is not None and HOST_SCOPE in token.scopes

    tokens = AgentTokens(runtime)

    def still_valid() -> bool:
        token = current()
        return token is not None and tokens.identity(token.token) == token.client_id

    server = build_server(runtime, identity, approval_wait=approval_wait, home_hint=home_hint,
                          only=only, name=name, host_trusted=host_trusted,
                          still_valid=still_valid)
    # the SDK's idle timeout, where it has one, set to what the quota counts with
    idle = SESSION_IDLE_SECONDS if "session_idle_timeout" in inspect.signature(
        StreamableHTTPSessionManager).parameters else None
    options: dict[str, Any] = {"session_idle_timeout": idle} if idle is not None else {}
    manager = StreamableHTTPSessionManager(
        app=server, max_request_body_size=runtime.config.input_limits.max_bytes, **options)
    quota = SessionQuota(lambda scope, receive, send: manager.handle_request(
        scope, receive, send), limit=max_sessions_per_agent, idle=idle)

    # INVARIANT: the body is read (and parsed by the strict loader) only once the token is
    # known: before, anyone saying `Bearer nope` had a MiB parsed on the event loop
    # (tests/security/test_268)
    strict = StrictJsonBody(quota, runtime.config.input_limits)

    async def endpoint(scope: Any, receive: Any, send: Any) -> None:
        await strict(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(
        routes=[Route(path, endpoint=RequireAuthMiddleware(endpoint, [AGENT_SCOPE]))],
        middleware=[Middleware(AuthenticationMiddleware,
                               backend=BearerAuthBackend(AgentTokens(runtime))),
                    Middleware(AuthContextMiddleware)],
        lifespan=lifespan)


class AgentTokens:
    """The SDK's token verifier over ``cradle-kg api-token``: agents only, never approvers."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        caller = self.caller(token)
        if caller is None:
            return None
        return AccessToken(token=token, client_id=caller.identity, subject=caller.identity,
                           scopes=[AGENT_SCOPE, *([HOST_SCOPE] if caller.is_host else [])])

    def caller(self, token: str) -> Any:
        """The agent ``token`` authenticates now (a :class:`~cradle_kg.server.auth.Caller`),
        or None: not an agent's, an approver's too, revoked, or its agent removed."""
        from ..server.auth import authenticate

        caller = authenticate(self.runtime.home, self.runtime.config, token,
                              self.runtime.approvals.approvers(),
                              self.runtime.declared_agents())
        if caller is None or not caller.is_agent or caller.is_approver:
            return None
        return caller

    def identity(self, token: str) -> str | None:
        """The agent ``token`` authenticates now, or None (:meth:`caller`)."""
        caller = self.caller(token)
        return None if caller is None else str(caller.identity)
