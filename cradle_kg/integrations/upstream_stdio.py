"""The proxy's stdio upstream: a JSON-RPC client of our own, for the runtime's threads.

The upstream is started as the SDK's ``stdio_client`` starts it — the SDK's default
environment, stderr passed through, a new process group, and on exit stdin closed, then
the process tree terminated if it has not left — but spoken to without the SDK's
``ClientSession``: a call comes from a runtime worker thread (the gateway's, the
verifier's), writes its request as one line to the upstream's stdin (under a lock, within
its deadline) and waits for its answer; one reader thread reads the upstream's stdout and
hands each answer to the call that waits for it by its id. No event loop, no memory
streams, no pydantic model of the envelope on the way: each line is parsed once, by the
strict loader (:func:`read_line`), and only a result is read into the SDK's result model
(issue 12: the hop through the SDK's session cost more than the proxy's budget).

Lines are read by :class:`~cradle_kg.inputs.CappedLines`, the reader of ``mcp serve``'s
stdin. The SDK's client read the upstream's stdout by ``buffer + chunk`` with no limit: an
upstream that wrote one line without an end grew the proxy's memory without bound. A line
past ``cap`` bytes is dropped as it arrives. Its id cannot be read (and an upstream can
put it anywhere in the line), so the moment a line passes the cap every request still
waiting for an answer fails with a JSON-RPC error (the gateway journals a failed call,
gate 2 reads the state back), the framing is kept (the next line is read as usual), and
the session goes on for the next call. A line the strict loader refuses (a key given
twice, ``NaN``, a lone surrogate, bytes not UTF-8) or that is no JSON-RPC message fails
the call it answers at once when its id can be read; any other is logged and skipped.

What the upstream sends that is not an answer is handled as the SDK's session handles it:
``notifications/tools/list_changed`` marks the proxy's tool list stale (listed again
before the next call), other notifications are ignored; a request — ``ping`` is answered
``{}``; sampling, elicitation and roots are refused as the SDK refuses them when its
client offers none; any other method is unknown. A call that waits past its deadline
fails, and the upstream is told (``notifications/cancelled``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from ..errors import InputError, ToolError
from ..inputs import CEILINGS, CappedLines

if TYPE_CHECKING:
    from mcp import types

logger = logging.getLogger(__name__)
_Model = TypeVar("_Model", bound=BaseModel)

#: bytes read from the upstream's stdout at a time
CHUNK = 1 << 16
#: the JSON-RPC code of the error that answers a request whose answer was too long
INVALID_REQUEST = -32600
#: JSON-RPC: the method is not one the client serves
METHOD_NOT_FOUND = -32601
#: the SDK's code of a request that waited past its deadline (HTTP's 408)
REQUEST_TIMEOUT = 408
#: the SDK's code of a request whose connection closed first
CONNECTION_CLOSED = -32000
#: how the error that stands for an upstream's answer begins
ANSWER = "the upstream's answer: "
#: seconds without a call after which the idle reader reads the upstream's stdout (in a run
#: of calls each call reads for itself: no thread hand-off on a call's way back)
IDLE_GRACE = 0.05
#: seconds the upstream has to leave once its stdin is closed, then to end on SIGTERM
TERMINATION_TIMEOUT = 2.0
#: seconds a reader goes on reading what is there past its deadline (``settle``'s deadline
#: is now: it reads what came between two calls, but not a stream without end)
READ_PAST_DEADLINE = 0.1
#: seconds a reply to the upstream's request may wait for the upstream to read it (less
#: when the call whose thread reads has less left)
REPLY_TIMEOUT = 5.0
#: what the client answers the upstream's requests, as the SDK's session answers them
#: when its client offers no sampling, elicitation or roots
REFUSED_REQUESTS = {"sampling/createMessage": "Sampling not supported",
                    "elicitation/create": "Elicitation not supported",
                    "roots/list": "List roots not supported"}


def upstream_cap(max_bytes: int, max_output_bytes: int) -> int:
    """The longest line read from an upstream: an answer carries its output twice (the
    structured content and its text), the text's JSON escaping can double that again, and
    the envelope is a message's size. Past it the output would break
    ``max_output_bytes`` anyway (the call fails either way)."""
    return 4 * max_output_bytes + max_bytes


#: how deep an upstream's line may nest: a record's ceiling, and the JSON-RPC envelope
_ENVELOPE_LEVELS = 4
#: what an upstream's line is read within (its length is the line cap's)
_LINE_LIMITS = CEILINGS.model_copy(update={
    "max_bytes": 1 << 62, "max_string_length": 1 << 62,
    "max_depth": CEILINGS.max_depth + _ENVELOPE_LEVELS})


def read_line(line: bytes) -> tuple[Any, tuple[str | int | None, str] | None]:
    """An upstream's line read by the strict loader: ``(message, None)``, or ``(None, (id,
    why))`` when it is refused — a key given twice, ``NaN``, a lone surrogate, bytes that
    are not UTF-8, a number past 1,000 digits, nesting past a record's ceiling — with the
    id it answers (None when it cannot be read).

    The SDK's parser read a line's key given twice last-wins (``"structuredContent":
    {"ok": false, "ok": true}`` answered ok) and took ``NaN``; a lone surrogate made it
    send an exception, and the call waited out its 60 s (``tests/security/test_99``)."""
    from ..inputs import load_json

    try:
        return load_json(line, limits=_LINE_LIMITS, source="the upstream's line"), None
    except InputError as exc:
        rid: str | int | None = None
        with contextlib.suppress(ValueError, RecursionError):
            found = json.loads(line)
            if isinstance(found, dict):
                rid = _id_of(found)
        return None, (rid, exc.message)


def line_refusal(line: bytes) -> tuple[str | int | None, str] | None:
    """Why the strict loader refuses an upstream's line or body, and the id it answers
    (:func:`read_line`), or None when it passes (the HTTP upstream's bodies and events,
    :mod:`.upstream_http`)."""
    return read_line(line)[1]


def _id_of(message: dict[str, Any]) -> str | int | None:
    rid = message.get("id")
    return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None


def too_long(cap: int) -> str:
    """The error of a call whose answer passed ``cap`` bytes (stdio and HTTP alike)."""
    return f"{ANSWER}more than the limit of {cap} bytes (dropped)"


def _error(code: int, message: str) -> Exception:
    from mcp.shared.exceptions import McpError
    from mcp.types import ErrorData

    return McpError(ErrorData(code=code, message=message))


#: the attribute that marks the error of a request that provably never reached the
#: upstream (:func:`not_sent`, :func:`never_sent`)
_NOT_SENT = "cradle_kg_not_sent"


def not_sent(exc: Exception) -> Exception:
    """``exc``, marked as the error of a request the upstream provably never received: not
    one byte of it was written (stdio: the session was closed before it, or the first write
    of its line failed; HTTP: the connection could not be made). A line written in part,
    a deadline, a connection reset after sending, a read error are *not* that: the
    upstream may have read the request (``tests/security/test_591``, ``test_592``)."""
    setattr(exc, _NOT_SENT, True)
    return exc


def never_sent(exc: BaseException) -> bool:
    """Whether ``exc`` is the error of a request the upstream provably never received
    (:func:`not_sent`)."""
    return getattr(exc, _NOT_SENT, False) is True


class StdioClient:
    """JSON-RPC over a started upstream's stdin and stdout, called from any thread."""

    def __init__(self, process: subprocess.Popen[bytes], cap: int,
                 on_list_changed: Callable[[], None] = lambda: None) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.cap = cap
        self.on_list_changed = on_list_changed
        self._stdin = process.stdin.fileno()
        os.set_blocking(self._stdin, False)  # a write waits within its call's deadline
        self._stdout = process.stdout.fileno()
        self._lines = CappedLines(cap)  # read by one thread at a time: the one `reading`
        self._write_lock = threading.Lock()
        #: stdin closed (:meth:`stop`), set and read under :attr:`_write_lock`: its number
        #: is free then, and may be any descriptor the process opened since
        self._stdin_closed = False
        self._stopping = False  # stop() called (once: test_621)
        #: the ids, the waiting calls, who reads, whether closed; notified when a call is
        #: answered, when the reader stops reading, when the calls in flight change
        held = threading.Lock()
        self._turn = threading.Condition(held)
        self._idle_turn = threading.Condition(held)  # the idle reader's, on the same lock
        self._waiting: dict[int, Future[dict[str, Any]]] = {}
        self._next_id = 0
        self._calls = 0  # requests in flight
        self._reading = False  # a thread reads stdout
        self._idle_reading = False  # … and it is the idle reader
        self._closed = False
        self._last_call = 0.0  # when the last call ended (monotonic)
        self._wake_out, self._wake_in = os.pipe()  # tells the idle reader a call began
        os.set_blocking(self._wake_out, False)
        os.set_blocking(self._wake_in, False)
        self._idle = threading.Thread(target=self._read_while_idle, daemon=True,
                                      name=f"upstream-stdout:{process.pid}")
        self._idle.start()

    # -- calls (the runtime's threads) -------------------------------------------------

    def request(self, method: str, params: dict[str, Any] | None, timeout: float
                ) -> dict[str, Any]:
        """The result of one request, or an ``McpError`` (the upstream's error, a refused or
        too long answer, the deadline, a closed connection)."""
        answer: Future[dict[str, Any]] = Future()
        with self._turn:
            if self._closed:  # nothing of it written
                raise not_sent(_error(CONNECTION_CLOSED, "Connection closed"))
            rid = self._next_id
            self._next_id += 1
            self._waiting[rid] = answer
            self._calls += 1
            if self._idle_reading:  # it hands stdout over to the calls
                with contextlib.suppress(BlockingIOError):
                    os.write(self._wake_in, b"\0")
        deadline = time.monotonic() + timeout
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._send(message, deadline)
            self._await(answer, deadline)
            return answer.result(0)
        except FutureTimeout:
            with contextlib.suppress(Exception):  # the upstream told: it may stop
                self._send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
                    "requestId": rid, "reason": "the proxy's deadline passed"}},
                    time.monotonic() + 1.0)
            raise _error(REQUEST_TIMEOUT, f"Timed out while waiting for response to "
                                          f"{method}. Waited {timeout} seconds.") from None
        finally:
            with self._turn:
                self._waiting.pop(rid, None)
                self._calls -= 1
                self._last_call = time.monotonic()
                self._turn.notify_all()

    def _await(self, answer: Future[dict[str, Any]], deadline: float) -> None:
        """Wait for ``answer``, reading stdout meanwhile when no other thread reads it (the
        call's own thread reads its answer: no hand-off between threads); raises
        ``FutureTimeout`` at ``deadline``."""
        while not answer.done():
            with self._turn:
                while not answer.done() and self._reading:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise FutureTimeout
                    self._turn.wait(left)
                if answer.done():
                    return
                self._reading = True
            try:
                self._read(answer.done, deadline)
            finally:
                with self._turn:
                    self._reading = False
                    self._turn.notify_all()
            if not answer.done() and time.monotonic() >= deadline:
                raise FutureTimeout

    def notify(self, method: str, params: dict[str, Any] | None = None,
               timeout: float = 5.0) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message, time.monotonic() + timeout)

    def initialize(self, timeout: float) -> types.InitializeResult:
        """The handshake, as the SDK's session makes it: the latest protocol version
        offered, one the SDK supports accepted, then ``notifications/initialized``."""
        from mcp import types
        from mcp.client.session import DEFAULT_CLIENT_INFO
        from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS

        result = self.request("initialize", {
            "protocolVersion": types.LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": DEFAULT_CLIENT_INFO.model_dump(mode="json", exclude_none=True)},
            timeout)
        init = _result(types.InitializeResult, result, "initialize")
        if init.protocolVersion not in SUPPORTED_PROTOCOL_VERSIONS:
            raise InputError(f"the upstream speaks MCP version "
                             f"`{str(init.protocolVersion)[:40]}`, which the proxy does not",
                             hint="supported: " + ", ".join(map(str, SUPPORTED_PROTOCOL_VERSIONS)))
        self.notify("notifications/initialized")
        return init

    def tool_call(self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None,
                  timeout: float) -> types.CallToolResult:
        from mcp import types

        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return _result(types.CallToolResult, self.request("tools/call", params, timeout),
                       "tools/call")

    def tools_page(self, cursor: str | None, timeout: float) -> types.ListToolsResult:
        from mcp import types

        params = {"cursor": cursor} if cursor is not None else None
        return _result(types.ListToolsResult, self.request("tools/list", params, timeout),
                       "tools/list")

    def _send(self, message: dict[str, Any], deadline: float) -> None:
        """One message, one line, written whole before ``deadline`` or the session ends
        (a line cut short would break the framing of every later message). A write that
        fails before one byte of the line was written raises the error :func:`not_sent`
        marks."""
        try:
            data = json.dumps(message, ensure_ascii=False, allow_nan=False,
                              separators=(",", ":")).encode("utf-8") + b"\n"
        except (ValueError, UnicodeEncodeError) as exc:
            raise ToolError(f"the call cannot be written as JSON: {exc}") from None
        # INVARIANT: no wait past ``deadline``, for the lock either (a reply to the
        # upstream's request holds it while the upstream does not read: test_207)
        if not self._write_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise _error(REQUEST_TIMEOUT, "the upstream does not read its input: the "
                         "request could not be written")
        try:
            if self._stdin_closed:
                # INVARIANT: never a write on the number of a closed stdin: the next open
                # took it, and the line went into an unrelated file or connection
                # (tests/security/test_620); nothing of it reached the upstream
                raise not_sent(_error(CONNECTION_CLOSED, "Connection closed"))
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(self._stdin, view):]
                except BlockingIOError:
                    left = deadline - time.monotonic()
                    writable = select.poll()
                    writable.register(self._stdin, select.POLLOUT)
                    if left <= 0 or not writable.poll(int(left * 1000) + 1):
                        if len(view) < len(data):
                            self._close()  # half a line written: no later line can be read
                        raise _error(REQUEST_TIMEOUT, "the upstream does not read its "
                                     "input: the request could not be written") from None
                except OSError:  # the upstream left (its input closed: EPIPE)
                    self._close()  # the proxy takes it as gone from now (alive())
                    closed = _error(CONNECTION_CLOSED, "Connection closed")
                    # INVARIANT: only a line of which not one byte was written never
                    # reached the upstream (tests/security/test_591); half a line might
                    # have been read, and stays an unknown outcome
                    raise (not_sent(closed) if len(view) == len(data) else closed) from None
        finally:
            self._write_lock.release()

    def alive(self) -> bool:
        """Whether the upstream may still answer: its session open and its process there
        (one killed is seen here before its reader reads the end of its stdout)."""
        return not self._closed and self.process.poll() is None

    # -- reading stdout (one thread at a time) ------------------------------------------

    def settle(self) -> None:
        """Handle what the upstream has already written, when no thread reads it now (a
        ``notifications/tools/list_changed`` between two calls is seen before the next)."""
        with self._turn:
            if self._reading or self._closed:
                return  # its reader handles it
            self._reading = True
        try:
            self._read(lambda: False, time.monotonic())
        finally:
            with self._turn:
                self._reading = False
                self._turn.notify_all()

    def _read_while_idle(self) -> None:
        """When no call has been in flight for :data:`IDLE_GRACE` seconds, stdout is read
        here: the upstream's notifications and requests between calls are handled as they
        come. In a run of calls, each call reads for itself (no hand-off between threads:
        the answer is read by the thread that waits for it), and before each
        :meth:`settle` reads what came between."""
        try:
            while True:
                with self._turn:
                    while not self._closed:
                        quiet = time.monotonic() - self._last_call
                        if not self._calls and not self._reading and quiet >= IDLE_GRACE:
                            break
                        self._idle_turn.wait(IDLE_GRACE - quiet if quiet < IDLE_GRACE
                                             else IDLE_GRACE)
                    if self._closed:
                        return
                    self._reading = self._idle_reading = True
                try:
                    self._read(lambda: self._calls > 0, None)
                finally:
                    with self._turn:
                        self._reading = self._idle_reading = False
                        self._turn.notify_all()
                with contextlib.suppress(BlockingIOError):
                    while os.read(self._wake_out, 64):
                        pass
        except Exception:  # never out of the thread: the calls waiting are failed
            logger.exception("the upstream's reader stopped")
            self._close()

    def _read(self, done: Callable[[], bool], deadline: float | None) -> None:
        """Read stdout and dispatch its lines until ``done()``, ``deadline`` (what is
        there already read, at least — for at most :data:`READ_PAST_DEADLINE` past it), the
        idle reader's wake-up (a call began) or the end of stdout (the session is closed)."""
        watched = select.poll()  # not `select.select`: no limit on the descriptor's number
        watched.register(self._stdout, select.POLLIN)
        if deadline is None:
            watched.register(self._wake_out, select.POLLIN)
        while not done() and not self._closed:
            left = None if deadline is None else deadline - time.monotonic()
            wait = None if left is None else 0 if left <= 0 else int(left * 1000) + 1
            ready = {fd for fd, _ in watched.poll(wait)}
            if self._wake_out in ready:
                return  # the idle reader: a call began, and reads for itself
            if self._stdout not in ready:
                if left is not None and left <= 0:
                    return
                continue
            try:
                chunk = os.read(self._stdout, CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                if last := self._lines.rest():
                    self._line(last, deadline)
                self._close()
                return
            ended, passed = self._lines.feed(chunk)
            for line in ended:
                if line is not None:  # None: its callers were failed when it passed
                    self._line(line, deadline)
            if passed:
                self._fail_all(INVALID_REQUEST, too_long(self.cap))
            # INVARIANT: a deadline ends the reading even while lines keep coming: an
            # upstream writing without pause held the call for ever (test_208)
            if deadline is not None and time.monotonic() >= deadline + READ_PAST_DEADLINE:
                return

    def _line(self, line: bytes, deadline: float | None) -> None:
        """Dispatch one line; ``deadline``: the reading call's (None: the idle reader's)."""
        if len(line) - line.endswith(b"\n") > self.cap:
            self._fail_all(INVALID_REQUEST, too_long(self.cap))
            return
        if not line.strip():
            return
        message, refused = read_line(line)
        if refused is not None:
            rid, why = refused
            if not self._fail(rid, INVALID_REQUEST, f"{ANSWER}refused: {why}"):
                logger.warning("the upstream wrote a line that is refused: %s", why[:300])
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._not_a_message(message)
            return
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            self._answer_request(message, method, deadline)
        elif isinstance(method, str) and "id" not in message:
            if method == "notifications/tools/list_changed":
                self.on_list_changed()
        elif "result" in message or "error" in message:
            self._response(message)
        else:
            self._not_a_message(message)

    def _not_a_message(self, message: Any) -> None:
        rid = _id_of(message) if isinstance(message, dict) else None
        if not self._fail(rid, INVALID_REQUEST, f"{ANSWER}not a JSON-RPC message"):
            logger.warning("the upstream wrote a line that is not a JSON-RPC message")

    def _response(self, message: dict[str, Any]) -> None:
        rid = _id_of(message)
        if isinstance(rid, str) and rid.isdigit():  # as the SDK's session reads an id
            rid = int(rid)
        result, error = message.get("result"), message.get("error")
        if "result" in message and "error" not in message and isinstance(result, dict):
            with self._turn:
                waiting = self._waiting.pop(rid, None) if isinstance(rid, int) else None
                if waiting is not None and not waiting.done():
                    waiting.set_result(result)
                    self._turn.notify_all()
            if waiting is None:
                logger.warning("the upstream answered a request it was not asked (%r)",
                               str(rid)[:40])
            return
        if ("result" not in message and isinstance(error, dict)
                and isinstance(error.get("code"), int) and not isinstance(error["code"], bool)
                and isinstance(error.get("message"), str)):
            self._fail(rid, error["code"], error["message"], said=False)
            return
        self._not_a_message(message)

    def _answer_request(self, message: dict[str, Any], method: str,
                        deadline: float | None) -> None:
        """Answer the upstream's request within :data:`REPLY_TIMEOUT` seconds, and within
        the deadline of the call whose thread reads: an upstream that writes requests and
        does not read its input held that call five seconds a request, past its deadline
        without bound (``tests/security/test_207``)."""
        rid = _id_of(message)
        if rid is None:
            self._not_a_message(message)
            return
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
        if method == "ping":
            reply["result"] = {}
        elif method in REFUSED_REQUESTS:
            reply["error"] = {"code": INVALID_REQUEST, "message": REFUSED_REQUESTS[method]}
        else:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
        until = time.monotonic() + REPLY_TIMEOUT
        with contextlib.suppress(Exception):  # an upstream that does not read: not answered
            self._send(reply, until if deadline is None else min(until, deadline))

    # -- failing calls --------------------------------------------------------------------

    def _fail(self, rid: str | int | None, code: int, message: str, *,
              said: bool = True) -> bool:
        """Fail the call waiting for ``rid``; whether one was. ``said``: log it (the
        proxy's own refusal, not the upstream's error answer)."""
        if isinstance(rid, str) and rid.isdigit():
            rid = int(rid)
        with self._turn:
            waiting = self._waiting.pop(rid, None) if isinstance(rid, int) else None
            if waiting is not None and not waiting.done():
                waiting.set_exception(_error(code, message))
                self._turn.notify_all()
        if waiting is None:
            return False
        if said:
            logger.warning("the upstream's answer to %s fails the call: %s", rid,
                           message[:300])
        return True

    def _fail_all(self, code: int, message: str) -> None:
        with self._turn:
            waiting, self._waiting = list(self._waiting.values()), {}
            for each in waiting:
                if not each.done():
                    each.set_exception(_error(code, message))
            self._turn.notify_all()
        if waiting:
            logger.warning("%s", message)

    def _close(self) -> None:
        with self._turn:
            closing, self._closed = not self._closed, True
            self._idle_turn.notify_all()
        self._fail_all(CONNECTION_CLOSED, "Connection closed")
        if closing:  # INVARIANT: once, before stop closes the wake-up pipe (test_621)
            with contextlib.suppress(OSError):  # the idle reader: to the end
                os.write(self._wake_in, b"\0")

    def stop(self) -> None:
        """Leave as the SDK's client leaves: stdin closed, a while for the upstream to
        leave, then its process group terminated (killed if it stays). Once: a second
        call returns — the descriptors closed the first time are numbers the process may
        have opened again since (``tests/security/test_621``)."""
        with self._turn:
            if self._stopping:
                return
            self._stopping = True
        with contextlib.suppress(OSError), self._write_lock:
            assert self.process.stdin is not None
            self._stdin_closed = True  # before: a failed close is not retried either
            self.process.stdin.close()
        try:
            self.process.wait(TERMINATION_TIMEOUT)
        except subprocess.TimeoutExpired:
            _terminate_group(self.process)
        self._close()  # from now no thread starts reading stdout
        self._idle.join(TERMINATION_TIMEOUT)
        with self._turn:  # INVARIANT: a call's own thread may still read it (test_622)
            self._turn.wait_for(lambda: not self._reading, TERMINATION_TIMEOUT)
            read = self._reading
        if not self._idle.is_alive():  # else it still reads: its descriptors stay open
            for fd in (self._wake_out, self._wake_in):
                with contextlib.suppress(OSError):
                    os.close(fd)
            if not read:  # else the number, freed, could be read from once reused
                with contextlib.suppress(OSError):
                    assert self.process.stdout is not None
                    self.process.stdout.close()


def _terminate_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the upstream's process group, SIGKILL if it is still there after a while
    (as the SDK's ``terminate_posix_process_tree``)."""
    try:
        group = os.getpgid(process.pid)
        os.killpg(group, signal.SIGTERM)
        ends = time.monotonic() + TERMINATION_TIMEOUT
        while time.monotonic() < ends:
            os.killpg(group, 0)
            time.sleep(0.1)
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except OSError as exc:
        logger.warning("the upstream's process group could not be ended (%s): "
                       "terminating the process", exc)
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(TERMINATION_TIMEOUT)


def _result(model: type[_Model], result: dict[str, Any], method: str) -> _Model:
    """``result`` read as the SDK reads it into ``model``; one that does not fit fails the
    call with a typed error."""
    from pydantic import ValidationError

    try:
        return model.model_validate(result)
    except ValidationError as exc:
        raise ToolError(f"{ANSWER}not a `{method}` result: "
                        f"{exc.errors()[0].get('msg', '')[:200]}") from None


@contextlib.contextmanager
def stdio_upstream(command: list[str], cap: int,
                   on_list_changed: Callable[[], None] = lambda: None
                   ) -> Iterator[StdioClient]:
    """The upstream ``command`` started (as the SDK starts one on POSIX: the SDK's default
    environment, its own session so that its tree can be ended, stderr passed through),
    its client for the time of the block, then stopped (:meth:`StdioClient.stop`)."""
    client = start_stdio(command, cap, on_list_changed)
    try:
        yield client
    finally:
        client.stop()


def start_stdio(command: list[str], cap: int,
                on_list_changed: Callable[[], None] = lambda: None) -> StdioClient:
    """The upstream ``command`` started and its client (not initialized); the caller stops
    it (:meth:`StdioClient.stop`). Raises ``OSError`` when it cannot be started."""
    from mcp.client import stdio

    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               env=stdio.get_default_environment(),
                               start_new_session=True)
    return StdioClient(process, cap, on_list_changed)
