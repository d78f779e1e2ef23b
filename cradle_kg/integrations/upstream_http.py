"""The proxy's streamable-HTTP upstream: the SDK's client, every answer read capped.

The SDK's ``streamablehttp_client`` reads an answer with httpx — a JSON body whole, an
event stream's event with its lines joined — with no limit, then parses it: an upstream
answering a ``tools/call`` with 300 MB of JSON grew the proxy by 1.7 GB, and one event
without end (an endless ``data:`` line, or endless short ones) without bound. An HTTP
error status, or a redirect the SDK does not follow, raised out of the SDK's task group
and ended the proxy. :func:`client_factory` gives the SDK an httpx client whose transport,
:class:`CappedTransport`, reads every answer under the cap of the stdio upstream
(:func:`.upstream_stdio.upstream_cap`):

* a JSON answer is held until it ends, an event stream is passed on event by event (each
  held until its blank line); past ``cap`` bytes the rest is not read (the connection
  is closed), so the proxy holds at most ``cap`` bytes of an answer;
* the answer to a request — a POST of a JSON-RPC request, whose id is read from the body
  the proxy wrote — that passes the cap, has not ended ``deadline`` seconds after it was
  sent, is not a 2xx JSON or event stream, redirects off the upstream's origin, is
  compressed, or cannot be fetched, is replaced by a JSON-RPC error answering that id:
  the call fails at once with the error (the gateway journals a failed call) and the
  session goes on, as on stdio;
* a JSON answer, and each event of a stream, is read with the strict loader's rules, as
  a stdio upstream's line is (a key given twice, ``NaN``, a lone surrogate: the SDK's
  parser read a key given twice last-wins); one it refuses is replaced by the JSON-RPC
  error answering its id (:func:`strict_answer`);
* a POST that carries no request (a notification) answered with an error status is
  taken as accepted (the SDK ended the session on one); any other answer (the GET
  stream of the upstream's own messages) that breaks these rules ends in
  :class:`AnswerRefused`, which the SDK handles (it reconnects a few times, then
  gives that stream up).

Redirects: the client follows none itself; the SDK (1.2x and later) follows one within
the endpoint's origin, and the transport refuses any off the upstream's origin whatever
the SDK version — mcp 1.20, which the package allows, followed every redirect: a 307 to
another host had the proxy post the call there, its arguments and idempotency key. The
client asks for ``identity``: a compressed answer is refused (its size decoded is not the
size read). The client reaches the upstream directly or through the environment's proxy
(``http_proxy``, ``no_proxy``), as httpx's own client would.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import AsyncIterator, Callable

import anyio
import httpx

from ..environment_proxies import environment_proxy, url_origin
from ..tls import tls_context
from .upstream_stdio import ANSWER, INVALID_REQUEST, line_refusal, too_long

logger = logging.getLogger(__name__)

#: an event stream's line ends (``\r\n`` first, so that it is one)
_EOL = re.compile(rb"\r\n|\r|\n")
#: headers that describe the body as the upstream sent it, not as it is passed on
_BODY_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})
JSON = "application/json"
SSE = "text/event-stream"


class AnswerRefused(httpx.TransportError):
    """An answer of the upstream not read: past the cap, late, off origin, compressed."""


def request_id(request: httpx.Request) -> str | int | None:
    """The id of the JSON-RPC request a POST carries (the body the proxy wrote)."""
    if request.method != "POST":
        return None
    try:
        body = json.loads(request.content)
    except (httpx.RequestNotRead, ValueError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("method"), str):
        return None
    rid = body.get("id")
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


def within_origin(upstream: httpx.URL, url: httpx.URL) -> bool:
    """``url`` is on the upstream's origin, or its https upgrade on the default ports."""
    if (upstream.scheme, upstream.host, upstream.port) == (url.scheme, url.host, url.port):
        return True
    return (upstream.host == url.host and upstream.scheme == "http" and url.scheme == "https"
            and upstream.port is None and url.port is None)


def upstream_name(url: str) -> str:
    """How an upstream on HTTP is named wherever it is shown or kept — its tools'
    descriptions, the agent reads; a verification's source, journaled: its origin alone.
    Its URL may carry its key (a user and password, a query, a path of its own): that is
    used only to reach it (``tests/security/test_267``)."""
    return url_origin(url)


def error_body(rid: str | int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {
        "code": INVALID_REQUEST, "message": message}}).encode()


class Events:
    """An event stream's bytes, cut after each event's blank line: at most one unfinished
    event held (``pending``)."""

    def __init__(self) -> None:
        self.pending = bytearray()
        self.line = 0  # bytes of the unfinished line
        self.cr = False  # the last byte read was `\r` (a `\n` next is the same line end)

    def feed(self, chunk: bytes, cap: int) -> tuple[bytes, bool]:
        """The events ``chunk`` ends, and whether one of them (or the unfinished one)
        passed ``cap`` bytes — then only the events before it, and the rest is dropped."""
        pos = 1 if self.cr and chunk.startswith(b"\n") else 0
        start, cut = 0, 0  # where the event being read began in chunk; the last event end
        size = len(self.pending)  # bytes of the event being read before `start`
        for m in _EOL.finditer(chunk, pos):
            if self.line + m.start() - pos == 0:  # a blank line: the event ends
                if size + m.end() - start > cap:
                    return self._done(chunk, cut), True
                start, cut, size = m.end(), m.end(), 0
            self.line, pos = 0, m.end()
        self.line += len(chunk) - pos
        self.cr = chunk.endswith(b"\r")
        if size + len(chunk) - start > cap:
            return self._done(chunk, cut), True
        done = self._done(chunk, cut)
        self.pending += chunk[cut:]
        return done, False

    def _done(self, chunk: bytes, cut: int) -> bytes:
        if not cut:
            return b""
        done = bytes(self.pending) + chunk[:cut]
        self.pending = bytearray()
        return done


def strict_answer(body: bytes, rid: str | int | None) -> bytes | None:
    """``body`` (one JSON message, whole) as it came, or — when the strict loader refuses
    it (:func:`.upstream_stdio.line_refusal`: a key given twice, ``NaN``, a lone surrogate,
    a runaway number or nesting) — the error answering the id it names, else ``rid`` (the
    request the answer is for); None when it names none and answers no request. The SDK's
    own parser read a key given twice last-wins: ``"structuredContent": {"ok": false, "ok":
    true}`` answered ok (``tests/security/test_110``)."""
    refusal = line_refusal(body)
    if refusal is None:
        return body
    named, why = refusal
    message = f"{ANSWER}refused: {why}"
    logger.warning("%s", message)
    answered = named if named is not None else rid
    return None if answered is None else error_body(answered, message)


def strict_events(done: bytes, rid: str | int | None) -> bytes:
    """Whole events of a stream (each ended by its blank line), each one whose data the
    strict loader refuses replaced by one carrying the error :func:`strict_answer` gives,
    or dropped when there is none to give; the others passed on as they came."""
    out, start, pos = bytearray(), 0, 0
    data: list[bytes] = []
    for m in _EOL.finditer(done):
        line, pos = done[pos:m.start()], m.end()
        if line:
            if line.startswith(b"data:"):
                data.append(line[5:].removeprefix(b" "))
            continue
        event, start = done[start:pos], pos  # a blank line: the event ends
        body, data = b"\n".join(data), []
        checked = strict_answer(body, rid) if body else body
        if checked is body:
            out += event
        elif checked is not None:
            out += b"event: message\ndata: " + checked + b"\n\n"
    return bytes(out + done[start:])


class CappedBody(httpx.AsyncByteStream):
    """An answer's body, read under the cap and the deadline (see the module)."""

    def __init__(self, inner: httpx.AsyncByteStream, *, rid: str | int | None, sse: bool,
                 cap: int, until: float, deadline: float,
                 late: Callable[[], None] | None = None) -> None:
        self.inner, self.rid, self.sse = inner, rid, sse
        self.cap, self.until, self.deadline = cap, until, deadline
        #: told when the answer has not ended by the deadline (the upstream is taken as
        #: down: :class:`CappedTransport`'s ``lost``, ``tests/security/test_533``)
        self.late = late
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self.inner.__aiter__()
        events, held = Events(), bytearray()
        while True:
            try:
                left = self.until - anyio.current_time()
                with anyio.fail_after(left if left < math.inf else None):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                rest = bytes(events.pending) if self.sse else bytes(held)
                if rest and not self.sse:  # a JSON answer, whole: read strictly
                    checked = strict_answer(rest, self.rid)
                    if checked is None:
                        raise AnswerRefused(f"{ANSWER}refused by the strict loader") from None
                    rest = checked
                if rest:
                    yield rest
                return
            except TimeoutError:
                message = f"{ANSWER}not ended within {self.deadline:g} s (dropped)"
                if self.late is not None:
                    self.late()
                break
            if self.sse:
                done, over = events.feed(chunk, self.cap)
                if done:
                    yield strict_events(done, self.rid)
            else:
                held += chunk
                over = len(held) > self.cap
            if over:
                message = too_long(self.cap)
                break
        await self.aclose()  # the rest is not read
        logger.warning("%s", message)
        if self.rid is None:
            raise AnswerRefused(message)
        body = error_body(self.rid, message)
        yield b"event: message\ndata: " + body + b"\n\n" if self.sse else body

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            await self.inner.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    """``inner``, every answer read under ``cap`` bytes, each answer to a request within
    ``deadline`` seconds, no redirect off ``upstream``'s origin (see the module)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, upstream: httpx.URL, *, cap: int,
                 deadline: float, lost: Callable[[], None] | None = None,
                 unsent: Callable[[httpx.Request], None] | None = None) -> None:
        self.inner, self.upstream, self.cap, self.deadline = inner, upstream, cap, deadline
        #: told when a request finds the upstream unreachable or its session gone
        #: (:func:`session_lost`): the proxy refuses calls until it is reached again
        self.lost = lost
        #: told of a request that provably never reached the upstream: its connection
        #: could not be made (:data:`NOT_SENT`; ``tests/security/test_592``)
        self.unsent = unsent

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        rid = request_id(request)
        # a request's answer, or the resumption of one, has a deadline; the GET stream none
        timed = rid is not None or "last-event-id" in request.headers
        until = anyio.current_time() + self.deadline if timed else math.inf
        try:
            with anyio.fail_after(self.deadline if timed else None):
                response = await self.inner.handle_async_request(request)
        except TimeoutError:
            # INVARIANT: an upstream that does not answer in time is down as one that
            # refuses the connection (tests/security/test_533): a hung upstream journaled an
            # intent and a human task per call of one outage
            if self.lost is not None:
                self.lost()
            return self.refuse(request, rid, f"none within {self.deadline:g} s")
        except httpx.TransportError as exc:
            if rid is None:
                raise
            if self.lost is not None and isinstance(exc, UNREACHABLE):
                self.lost()
            if self.unsent is not None and isinstance(exc, NOT_SENT):
                self.unsent(request)
            return self.refuse(request, rid, f"not fetched: {type(exc).__name__}: {exc}"[:300])
        if self.lost is not None and rid is not None and session_lost(request, response):
            self.lost()
        problem = self.problem(request, response, rid)
        if problem is not None:
            await response.aclose()
            return self.refuse(request, rid, problem)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        sse = response.headers.get("content-type", "").lower().startswith(SSE)
        body = CappedBody(response.stream, rid=rid, sse=sse, cap=self.cap, until=until,
                          deadline=self.deadline, late=self.lost)
        headers = [(k, v) for k, v in response.headers.multi_items()
                   if k.lower() not in _BODY_HEADERS]
        return httpx.Response(response.status_code, headers=headers, stream=body,
                              extensions=response.extensions)

    def problem(self, request: httpx.Request, response: httpx.Response,
                rid: str | int | None) -> str | None:
        """Why ``response`` is not passed on, if it is not."""
        location = response.headers.get("location")
        if response.is_redirect and location is not None:
            try:
                target = request.url.join(location)
            except httpx.InvalidURL:
                return "a redirect to an invalid URL (not followed)"
            if not within_origin(self.upstream, target):
                return (f"a redirect to {url_origin(target)}, off the upstream's origin "
                        f"{url_origin(self.upstream)} (not followed)")
            return None
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            return f"compressed (`{encoding[:40]}`), which the proxy does not read"
        if rid is None and request.method == "POST" and not response.is_success:
            return f"HTTP {response.status_code}"
        if rid is None:
            return None
        if not response.is_success:
            return f"HTTP {response.status_code}"
        kind = response.headers.get("content-type", "").lower()
        if response.status_code != 202 and not kind.startswith((JSON, SSE)):
            return f"of type `{kind[:60]}`"
        return None

    def refuse(self, request: httpx.Request, rid: str | int | None,
               problem: str) -> httpx.Response:
        """The answer that stands for a refused one: a JSON-RPC error for a request, an
        acceptance for a notification, else :class:`AnswerRefused`."""
        message = ANSWER + problem
        logger.warning("%s", message)
        if rid is not None:
            return httpx.Response(200, headers={"content-type": JSON},
                                  content=error_body(rid, message), request=request)
        if request.method == "POST":
            return httpx.Response(202, request=request)
        raise AnswerRefused(message, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


#: what a request that finds the upstream unreachable raises: the connection refused,
#: reset, or closed without an answer — not a timeout (a slow upstream), not an answer
UNREACHABLE = (httpx.NetworkError, httpx.RemoteProtocolError)

#: what a request raises when not one byte of it reached the upstream: the connection (or
#: its TLS handshake) could not be made. Not a timeout, not a reset or a closed connection,
#: not a read or write error: the request may have been sent (``tests/security/test_592``)
NOT_SENT = (httpx.ConnectError,)


def call_key(request: httpx.Request, name: str) -> str | None:
    """The ``_meta`` entry ``name`` of the ``tools/call`` a POST carries (the idempotency
    key the proxy sends), or None."""
    try:
        body = json.loads(request.content)
    except (httpx.RequestNotRead, ValueError):
        return None
    if not isinstance(body, dict) or body.get("method") != "tools/call":
        return None
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    value = meta.get(name) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def session_lost(request: httpx.Request, response: httpx.Response) -> bool:
    """Whether ``response`` says the session the request named is gone: ``404`` to a
    request that carries an ``Mcp-Session-Id`` (the upstream restarted, or ended it), to
    which the client must start a new session (MCP, streamable HTTP)."""
    return response.status_code == 404 and "mcp-session-id" in request.headers


def client_factory(url: str, *, cap: int, deadline: float,
                   lost: Callable[[], None] | None = None,
                   unsent: Callable[[httpx.Request], None] | None = None
                   ) -> Callable[..., httpx.AsyncClient]:
    """An ``httpx_client_factory`` for the SDK's ``streamablehttp_client``: its clients
    send through :class:`CappedTransport` (``lost``: told when the upstream is found
    unreachable; ``unsent``: of a request that never reached it) and follow no
    redirect."""
    upstream = httpx.URL(url)

    def make(headers: dict[str, str] | None = None, timeout: httpx.Timeout | None = None,
             auth: httpx.Auth | None = None) -> httpx.AsyncClient:
        inner = httpx.AsyncHTTPTransport(proxy=environment_proxy(upstream),
                                         verify=tls_context())
        return httpx.AsyncClient(
            headers={**(headers or {}), "Accept-Encoding": "identity"},
            timeout=timeout if timeout is not None else httpx.Timeout(30.0, read=300.0),
            auth=auth, follow_redirects=False,
            transport=CappedTransport(inner, upstream, cap=cap, deadline=deadline,
                                      lost=lost, unsent=unsent))

    return make
