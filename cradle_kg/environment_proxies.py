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
"""

from __future__ import annotations

import ssl
import urllib.request

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


class EnvironmentTransport(httpx.BaseTransport):
    """Sends each request directly or through the proxy the environment names for its
    URL (:func:`environment_proxy`): never through one for a loopback host."""

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
                found = self._transports[proxy] = httpx.HTTPTransport(
                    proxy=proxy, verify=self._verify)
            self._routes[key] = found
        return found

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._for(request.url).handle_request(request)

    def close(self) -> None:
        for transport in self._transports.values():
            transport.close()
