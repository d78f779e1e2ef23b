"""A client must send its request in time, and idle clients cannot exhaust the server's files.

Found (``tests/security/test_49_slow_clients.py``): uvicorn keeps a connection that never
finishes its request's headers for as long as the client likes — it has a timeout for an
idle kept-alive connection only. From one unauthenticated client, 2,500 connections that
each sent half a request line took the server's 1,024 file descriptors (a common soft
limit for a service): every other request, ``/healthz`` included, was then dropped
("server disconnected") for as long as the attacker held them.

* :func:`request_deadlines` is the HTTP protocol of every server that listens on a network
  port (the query workers of ``cradle-kg serve``, ``mcp serve`` and ``mcp proxy`` over
  HTTP): a request's headers must arrive within ``header_seconds`` of the connection (or
  of the end of the answer before, on a kept-alive connection) — else an HTTP 408 and the
  connection is closed — and its body within ``body_seconds`` of its headers — else the
  connection is closed. A whole request being answered is not timed here (the query
  deadline and the app's own limits are); its answer, once written, is: what the client's
  socket did not take must be taken at :data:`MIN_SEND_RATE` at least, looked at every
  ``header_seconds``, else the connection is aborted and the bytes dropped (a client
  reading nothing held a 50 MB answer in the server's memory for as long as it liked:
  ``tests/security/test_449``).
* :func:`raise_open_files` lifts the process's soft limit of open files to its hard limit
  at start (the workers inherit it): what a connection costs is then memory, not one of
  1,024 slots. With both, a client holds at most the connections it opens within
  ``header_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

#: seconds a client has to send a request's headers (``--header-timeout``)
HEADER_SECONDS: Final = 10.0
#: seconds a client has, after its headers, to send the request's body
BODY_SECONDS: Final = 60.0
#: bytes a request line and its headers may take (431 beyond; h11 alone had a cap, 16 KiB)
MAX_HEADER_BYTES: Final = 64 * 1024
#: bytes a second a client must take of an answer its socket did not take at once
#: (looked at every ``header_seconds``; the connection is aborted when it falls behind)
MIN_SEND_RATE: Final = 64 * 1024

def _closing(status: bytes, text: bytes) -> bytes:
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(text)).encode() + b"\r\n"
            b"connection: close\r\n\r\n" + text)


_TIMEOUT: Final = _closing(b"408 Request Timeout", b"the request did not arrive in time\n")
_TOO_LONG: Final = _closing(b"431 Request Header Fields Too Large",
                            b"the request line and headers are over %d bytes\n"
                            % MAX_HEADER_BYTES)


def raise_open_files() -> int:
    """The soft limit of open files raised to the hard one; returns the limit in force."""
    try:
        import resource
    except ImportError:  # not POSIX
        return -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return int(resource.getrlimit(resource.RLIMIT_NOFILE)[0])


class _Written:
    """A connection's transport that counts the bytes written to it: what the client has
    taken is those less what still waits in the transport's buffer."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.written = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += len(data)
        self.transport.write(data)

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def taken(self) -> int:
        return self.written - self.transport.get_write_buffer_size()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def request_deadlines(header_seconds: float = HEADER_SECONDS,
                      body_seconds: float = BODY_SECONDS, *, base: type[Any] | None = None,
                      max_header_bytes: int = MAX_HEADER_BYTES) -> type[Any]:
    """uvicorn's HTTP protocol (``base``; by default httptools or h11, as uvicorn picks)
    with the deadlines of the module's doc, and a cap on a request's line and headers
    (``max_header_bytes``: 431 and closed beyond — httptools had none: one header of 80 MB
    sent within the deadline grew a worker by 140 MB); pass it as
    ``uvicorn.Config(http=...)``."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol as base

    class RequestDeadlines(base):  # type: ignore[misc, valid-type]
        _deadline: asyncio.TimerHandle | None = None
        #: the request whose headers were seen (its body is timed, then its answer is not)
        _request: Any = None
        #: bytes received since the last request's headers were complete (or the connection)
        _waiting: int = 0
        #: the connection's transport, counting what is written to it
        _out: _Written | None = None
        #: bytes of answers the client's socket had taken at the last look, and the bytes
        #: that waited for it then
        _taken: int = 0
        _pending: int = 0
        #: whether the request's body is still awaited (timed by ``body_seconds``)
        _body: bool = False

        def _arm(self, seconds: float) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(seconds, self._expired)

        def connection_made(self, transport: asyncio.Transport) -> None:
            self._out = _Written(transport)
            super().connection_made(self._out)
            self._arm(header_seconds)

        def _look(self) -> None:
            """Remember what the client has taken and what waits for it (the next look
            compares)."""
            if self._out is not None:
                self._taken = self._out.taken()
                self._pending = self._out.get_write_buffer_size()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            cycle = self.cycle
            if cycle is not None and cycle is not self._request:  # a request's headers are in
                self._request = cycle
                self._waiting = 0
                self._look()
                self._body = cycle.more_body
                # its body is timed; a whole request's answer is looked at (_expired)
                self._arm(body_seconds if self._body else header_seconds)
            elif cycle is not None and self._body and not cycle.more_body:
                self._body = False  # the body arrived: the answer is looked at from now
                self._look()
                self._arm(header_seconds)
            elif cycle is None or (cycle.response_complete and not cycle.more_body):
                # reading a request's line and headers (not the rest of an answered body)
                self._waiting += len(data)
                if self._waiting > max_header_bytes and not self.transport.is_closing():
                    self.transport.write(_TOO_LONG)
                    self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._waiting = 0
            self._look()
            self._arm(header_seconds)  # the next request's headers (or the keep-alive end)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            super().connection_lost(exc)

        def _expired(self) -> None:
            self._deadline = None
            transport = self.transport
            if transport is None:
                return
            cycle = self.cycle
            if transport.get_write_buffer_size() and self._out is not None:
                # INVARIANT: an answer the client does not take is not held for it — written
                # whole (a query's), streamed (what the workers pass on from the app), or
                # behind another request the client sent after it: it must be taken at
                # MIN_SEND_RATE at least, judged over a whole look (bytes waited at the last
                # one as at this one), else the connection is aborted and its bytes
                # dropped — a closing connection too (a close waits for the bytes to go;
                # tests/security/test_449)
                if self._pending and self._out.taken() - self._taken \
                        < MIN_SEND_RATE * header_seconds:
                    transport.abort()
                    return
                self._look()
                self._arm(header_seconds)
                return
            if transport.is_closing():
                return
            if cycle is not None and cycle is self._request and not cycle.response_complete:
                if not cycle.more_body:  # a whole request, being answered: not timed here,
                    self._look()  # but what it writes is (looked at again)
                    self._arm(header_seconds)
                    return
                transport.close()  # its body did not arrive in time
                return
            transport.write(_TIMEOUT)  # no request under way: its headers did not arrive
            transport.close()

    return RequestDeadlines


__all__ = ["BODY_SECONDS", "HEADER_SECONDS", "MAX_HEADER_BYTES", "MIN_SEND_RATE",
           "raise_open_files", "request_deadlines"]
