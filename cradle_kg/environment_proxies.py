"""The proxy the environment names for a URL, and never one for this machine.

httpx reads ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY`` (and ``NO_PROXY``) from the
environment and exempts no loopback host: a graph store on 127.0.0.1, allowed basic
credentials over plain http because the request never leaves the machine
(``graph_credentials_in_clear``, ``test_372``), had them and its queries sent to a
plain-http proxy on another machine; so had a local model server its bearer key and an
``mcp proxy --upstream`` on 127.0.0.1 its calls (``tests/security/test_401``).

Every HTTP client the runtime builds for a URL someone configured takes its transport from
here: :func:`environment_proxy` is the environment's proxy for a URL (as
``urllib.request.getproxies`` and ``proxy_bypass`` read it, as httpx does), or None for a
loopback host (``graph_config.loopback``, by its name alone: the hosts
``graph_credentials_in_clear`` lets credentials reach over plain http);
:class:`EnvironmentTransport` routes each request so, for a client that speaks to several
URLs.

:func:`deadline` bounds a whole exchange in time: httpx's timeout is per read (and per
write, per connect), so a peer that sends its headers a byte at a time, each within the
timeout, held the caller for as long as it liked (``tests/security/test_611``). Within
``with deadline(seconds):`` every read, write and connect of a transport made here waits
at most what is left of it, and raises httpx's own timeout once it has passed.
"""

from __future__ import annotations

import contextvars
import ssl
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from .storage.graph_config import loopback


def url_origin(url: httpx.URL | str) -> str:
    """How a server the runtime reaches by a configured URL is named wherever it is shown
    or kept — messages, errors journaled, tools' descriptions: its origin alone (scheme,
    host, port). The URL may carry its key (a user and password, a query, a path of its
    own): that is used only to reach it (``tests/security/test_267``, ``test_610``)."""
    url = httpx.URL(url)
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{url.scheme}://{host}" + (f":{url.port}" if url.port else "")


def environment_proxy(url: httpx.URL | str) -> str | None:
    """The proxy the environment names for ``url`` (``<scheme>_proxy``, ``all_proxy``,
    ``no_proxy``), None for a loopback host: httpx ignores the environment for a client
    given its own transport."""
    url = httpx.URL(url)
    if loopback(url.host) or urllib.request.proxy_bypass(url.host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(url.scheme) or proxies.get("all")


#: the monotonic time the current exchange must end by (None: no deadline)
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "cradle_http_deadline", default=None)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every read, write and connect of an :class:`EnvironmentTransport` within the block
    ends within ``seconds`` of its start, all together (see the module's docstring)."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _within(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` cut to what is left of the current deadline; ``expired`` raised when
    nothing is left."""
    end = _DEADLINE.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise expired("the exchange did not end by its deadline")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every wait is cut to the current deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _within(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _within(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(
            ssl_context, server_hostname, _within(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """Opens connections within the current deadline, each a :class:`_DeadlineStream`."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_tcp(
            host, port, _within(timeout, httpcore.ConnectTimeout), local_address,
            socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None
                            ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_unix_socket(
            path, _within(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _BoundedTransport(httpx.HTTPTransport):
    """httpx's transport (through ``proxy``, or direct) whose connections keep the
    current :func:`deadline`. httpx takes no network backend, so the connection pool is
    made here as httpx makes it (its default limits), with one."""

    def __init__(self, proxy: str | None, verify: ssl.SSLContext) -> None:
        super().__init__(verify=verify, proxy=proxy)
        backend = _DeadlineBackend(httpcore.SyncBackend())
        sizes: dict[str, Any] = {"max_connections": 100, "max_keepalive_connections": 20,
                                 "keepalive_expiry": 5.0}
        if proxy is None:
            self._pool = httpcore.ConnectionPool(ssl_context=verify, network_backend=backend,
                                                 **sizes)
            return
        via = httpx.Proxy(url=proxy)
        url = httpcore.URL(scheme=via.url.raw_scheme, host=via.url.raw_host,
                           port=via.url.port, target=via.url.raw_path)
        if via.url.scheme in ("http", "https"):
            self._pool = httpcore.HTTPProxy(
                proxy_url=url, proxy_auth=via.raw_auth, proxy_headers=via.headers.raw,
                ssl_context=verify, proxy_ssl_context=via.ssl_context,
                network_backend=backend, **sizes)
        else:  # socks5: httpx checked the scheme and that socksio is there
            self._pool = httpcore.SOCKSProxy(
                proxy_url=url, proxy_auth=via.raw_auth, ssl_context=verify,
                network_backend=backend, **sizes)


class EnvironmentTransport(httpx.BaseTransport):
    """Sends each request directly or through the proxy the environment names for its
    URL (:func:`environment_proxy`): never through one for a loopback host; within the
    current :func:`deadline`, if any."""

    def __init__(self, *, verify: ssl.SSLContext) -> None:
        self._verify = verify
        self._routes: dict[tuple[str, str, int | None], httpx.HTTPTransport] = {}
        self._transports: dict[str | None, httpx.HTTPTransport] = {}

    def _for(self, url: httpx.URL) -> httpx.HTTPTransport:
        key = (url.scheme, url.host, url.port)
        found = self._routes.get(key)
        if found is None:
            proxy = environment_proxy(url)
            found = self._transports.get(proxy)
            if found is None:
                found = self._transports[proxy] = _BoundedTransport(proxy, self._verify)
            self._routes[key] = found
        return found

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._for(request.url).handle_request(request)

    def close(self) -> None:
        for transport in self._transports.values():
            transport.close()
