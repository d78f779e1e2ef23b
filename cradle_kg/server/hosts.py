"""The names and web origins a server answers to: its guard against DNS rebinding.

A browser sends the name it resolved as ``Host``: a page of ``evil.example`` whose name an
attacker re-points at 127.0.0.1 (DNS rebinding) reaches a loopback server as
``evil.example``, same-origin for the browser — so CORS does not stop it from reading the
answers (``tests/security/test_51``). A server on a loopback address therefore answers only
to the loopback names and to those its operator adds (``--allow-host``); on another
address, only to those added (none added: any name, the operator's choice).

The MCP specification (streamable HTTP) asks a server to check ``Origin`` too: a page's
requests carry it, and one of a page elsewhere is refused (403) unless the operator names
that origin (``--allow-origin``) or the page is on one of the server's own names (a tool
of the machine itself, such as the MCP Inspector on ``http://localhost:6274``). A client
that is no browser page sends no ``Origin`` and is answered (``tests/security/test_264``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Final
from urllib.parse import urlsplit

from .guard import ASGIApp, Receive, Scope, Send

#: the names of this machine's loopback interface: what a server bound to it answers to
LOOPBACK_NAMES: Final = ("localhost", "127.0.0.1", "::1")


def loopback_bind(host: str) -> bool:
    """Whether ``host`` (a server's ``--host``) is this machine's loopback interface."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def answered_names(bind: str, extra: Sequence[str]) -> tuple[str, ...]:
    """The ``Host`` names a server on ``bind`` answers to: on a loopback address its
    loopback names and ``extra``; elsewhere ``extra`` alone (none given: any)."""
    names = tuple(h.strip().lower().rstrip(".") for h in extra)
    return (*LOOPBACK_NAMES, *names) if loopback_bind(bind) else names


def _header(scope: Scope, name: bytes) -> str | None:
    value = next((v for k, v in scope.get("headers", ()) if k == name), None)
    return None if value is None else bytes(value).decode("latin-1").strip()


def allowed_host(scope: Scope, allowed: Sequence[str], *,
                 command: str = "cradle-kg serve") -> str | None:
    """Why a request's ``Host`` is not one of ``allowed`` (None: it is, or anything is).
    A request without ``Host`` (HTTP/1.0, no browser) is let through."""
    if not allowed:
        return None
    value = _header(scope, b"host")
    if value is None:
        return None
    name = value.lower()
    if name.startswith("["):  # [::1]:7878
        name = name[1:name.find("]")] if "]" in name else name
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    if name.rstrip(".") in allowed:
        return None
    return (f"this server does not answer to the host name `{name[:100]}` (it answers to "
            f"{', '.join(allowed)}; `{command} --allow-host NAME` adds one)\n")


def allowed_origin(scope: Scope, origins: Sequence[str], hosts: Sequence[str], *,
                   command: str = "cradle-kg mcp serve") -> str | None:
    """Why a request's ``Origin`` (the page that sends it) is not answered, or None: no
    ``Origin`` (no page), one of ``origins`` (``*``: any), or a page on one of ``hosts``
    (the names the server answers to; none: no page is)."""
    value = _header(scope, b"origin")
    if value is None:
        return None
    origin = value.lower().rstrip("/")
    if "*" in origins or origin in (o.strip().lower().rstrip("/") for o in origins):
        return None
    try:
        name = urlsplit(origin).hostname
    except ValueError:  # `http://[::1`: no origin at all
        name = None
    if name is not None and hosts and name.rstrip(".") in hosts:
        return None
    return (f"this server does not answer pages of `{value[:100]}` (a page of another site "
            f"may not drive it; `{command} --allow-origin ORIGIN` adds one)\n")


class BrowserGuard:
    """ASGI middleware, outermost: a request naming another ``Host`` is a 421, one from a
    page of another ``Origin`` a 403 — before anything else reads it (the token, the
    body)."""

    def __init__(self, app: ASGIApp, *, hosts: Sequence[str], origins: Sequence[str],
                 command: str) -> None:
        self.app = app
        self.hosts = tuple(hosts)
        self.origins = tuple(origins)
        self.command = command

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http":
            host = allowed_host(scope, self.hosts, command=self.command)
            origin = None if host is not None else allowed_origin(
                scope, self.origins, self.hosts, command=self.command)
            if host is not None or origin is not None:
                await _refuse(send, 421 if host is not None else 403, host or origin or "")
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode("ascii"))]})
    await send({"type": "http.response.body", "body": body})
