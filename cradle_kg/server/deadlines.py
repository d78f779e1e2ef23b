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
  deadline and the app's own limits are).
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

_BODY: Final = b"the request did not arrive in time\n"
_TIMEOUT: Final = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                   b"content-length: " + str(len(_BODY)).encode() + b"\r\n"
                   b"connection: close\r\n\r\n" + _BODY)


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


def request_deadlines(header_seconds: float = HEADER_SECONDS,
                      body_seconds: float = BODY_SECONDS, *, base: type[Any] | None = None
                      ) -> type[Any]:
    """uvicorn's HTTP protocol (``base``; by default httptools or h11, as uvicorn picks)
    with the deadlines of the module's doc; pass it as ``uvicorn.Config(http=...)``."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol as base

    class RequestDeadlines(base):  # type: ignore[misc, valid-type]
        _deadline: asyncio.TimerHandle | None = None
        #: the request whose headers were seen (its body is timed, then its answer is not)
        _request: Any = None

        def _arm(self, seconds: float) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(seconds, self._expired)

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self._arm(header_seconds)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            cycle = self.cycle
            if cycle is not None and cycle is not self._request:  # a request's headers are in
                self._request = cycle
                self._arm(body_seconds)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm(header_seconds)  # the next request's headers (or the keep-alive end)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            super().connection_lost(exc)

        def _expired(self) -> None:
            self._deadline = None
            transport = self.transport
            if transport is None or transport.is_closing():
                return
            cycle = self.cycle
            if cycle is not None and cycle is self._request and not cycle.response_complete:
                if not cycle.more_body:
                    return  # a whole request, being answered: not timed here
                transport.close()  # its body did not arrive in time
                return
            transport.write(_TIMEOUT)  # no request under way: its headers did not arrive
            transport.close()

    return RequestDeadlines


__all__ = ["BODY_SECONDS", "HEADER_SECONDS", "raise_open_files", "request_deadlines"]
