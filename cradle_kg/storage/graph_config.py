"""Which graph store a home uses: the setting and how it resolves to endpoints.

* unset: the embedded on-disk Oxigraph store ``<home>/graph``;
* ``"graph": "http://host:7878"`` — the store's **base URL**: queries go to
  ``<base>/query``, updates to ``<base>/update``, the Graph Store HTTP Protocol to
  ``<base>/store`` (the layout of ``oxigraph serve``);
* ``"graph": {"query": URL, "update": URL, "store": URL}`` — the three endpoints named
  (Fuseki: ``/ds/query`` ``/ds/update`` ``/ds/data``; Virtuoso: ``/sparql-auth`` twice and
  ``/sparql-graph-crud-auth``, basic auth enabled on them), with optional ``"user"``
  (basic auth; the password is read from the environment variable ``"password_env"``),
  ``"token_env"`` (bearer auth: the variable holding the token), ``"timeout_s"`` and
  ``"graph_param"`` (the Graph Store protocol's graph parameter, ``graph`` by the
  standard).

``CRADLE_GRAPH_URL`` (environment) wins over the file: a base URL, or
``query=URL update=URL store=URL`` (space separated). ``CRADLE_GRAPH_USER`` /
``CRADLE_GRAPH_PASSWORD`` give basic auth, ``CRADLE_GRAPH_TOKEN`` a bearer token, and
``user:password@`` in a URL basic auth too. Secrets are never written in ``config.json``.

Credentials go in clear only to this machine: a setting that sends a password or a token
over ``http://`` to a host that is not loopback (127.0.0.0/8, ``::1``, ``localhost``) is
refused — in ``config.json`` when it is loaded (:func:`check_declared`), with the
environment's credentials when the store is opened (:func:`resolve`) — unless it says
``"allow_plain_http_credentials": true`` (``CRADLE_GRAPH_ALLOW_PLAIN_HTTP_CREDENTIALS=1``
with ``CRADLE_GRAPH_URL``): ``tests/security/test_372``.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import CradleError, GraphCredentialsInClearError, InputError

GRAPH_URL_ENV = "CRADLE_GRAPH_URL"
#: ``1``: credentials may go over plain ``http://`` to a store on another host
PLAIN_HTTP_OPT_IN_ENV = "CRADLE_GRAPH_ALLOW_PLAIN_HTTP_CREDENTIALS"
_URL = r"^https?://\S+$"
#: the longest a request to the store may wait, in seconds (a body gets ten times that)
MAX_TIMEOUT_S = 3600.0
#: a URL's user and password: what follows ``://`` up to the last ``@`` of its authority
_USERINFO = re.compile(r"(?<=://)[^/?#\s]*@")
#: a URL's query and fragment: from the first ``?`` or ``#`` on
_QUERY = re.compile(r"[?#]\S*")


class GraphEndpoints(BaseModel):
    """A remote store's endpoints (the ``"graph"`` object of ``config.json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # at first use

    query: str = Field(pattern=_URL)
    update: str = Field(pattern=_URL)
    store: str = Field(pattern=_URL)
    user: str | None = None
    #: the environment variable holding the basic-auth password
    password_env: str | None = None
    #: the environment variable holding a bearer token
    token_env: str | None = None
    timeout_s: float = Field(default=30.0, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    #: the Graph Store protocol's parameter naming a graph (the standard's ``graph``;
    #: Virtuoso's ``/sparql-graph-crud`` also reads ``graph-uri``)
    graph_param: str = Field(default="graph", pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")
    #: credentials may go over plain ``http://`` to a host that is not loopback (the
    #: network between is trusted): off, such a setting is refused
    allow_plain_http_credentials: bool = False


class RemoteGraph(BaseModel):
    """A resolved remote store: endpoints without credentials, and the credentials."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # at first use

    query: str
    update: str
    store: str
    basic: tuple[str, str] | None = None
    bearer: str | None = None
    timeout_s: float = 30.0
    graph_param: str = "graph"


def _strip_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its user and password, and them; the URL is checked (a host, a
    port that is a number within range): a bad one raised ``ValueError`` out of every
    command that opened the graph, and an IPv6 host lost its brackets
    (tests/security/test_346)."""
    try:
        parts = urlsplit(url)
        if not parts.hostname:
            raise ValueError("no host")
        parts.port  # noqa: B018 -- raises ValueError for a port out of range or not a number
    except ValueError as exc:
        raise InputError(f"graph setting `{redact_url(url)}`: not a URL with a host and "
                         f"a port ({exc})") from None
    if parts.username is None:
        return url, None
    netloc = parts.netloc.rpartition("@")[2]  # the host as written: [::1] keeps its brackets
    return (urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)),
            (parts.username, parts.password or ""))


def from_base(base: str) -> GraphEndpoints:
    root = base.rstrip("/")
    return GraphEndpoints(query=f"{root}/query", update=f"{root}/update", store=f"{root}/store")


def parse_setting(value: str) -> GraphEndpoints:
    """A ``CRADLE_GRAPH_URL`` value: a base URL, or ``query=… update=… store=…``."""
    text = value.strip()
    try:
        if "=" not in text.split("://", 1)[0] and " " not in text and "query=" not in text:
            return from_base(text)
        fields: dict[str, str] = {}
        for item in text.split():
            key, sep, url = item.partition("=")
            if not sep or key not in ("query", "update", "store"):
                raise InputError(f"graph setting `{redact_url(item)}`: expected query=URL, "
                                 "update=URL or store=URL")
            fields[key] = url
        return GraphEndpoints(**fields)
    except ValidationError as exc:
        raise InputError(f"graph setting `{redact_url(text)}`: not an http(s) URL (or "
                         "query=, update= and store= URLs)",
                         hint="`http://host:7878` (oxigraph serve) or "
                              "`query=URL update=URL store=URL`") from exc


def resolve(endpoints: GraphEndpoints) -> RemoteGraph:
    """The endpoints with credentials taken out of the URLs and the environment."""
    query, basic = _strip_userinfo(endpoints.query)
    update, basic2 = _strip_userinfo(endpoints.update)
    store, basic3 = _strip_userinfo(endpoints.store)
    basic = basic or basic2 or basic3
    user = endpoints.user or os.environ.get("CRADLE_GRAPH_USER")
    if user:
        env = endpoints.password_env or "CRADLE_GRAPH_PASSWORD"
        basic = (user, os.environ.get(env, ""))
    token_env = endpoints.token_env or "CRADLE_GRAPH_TOKEN"
    bearer = os.environ.get(token_env) or None
    if bearer or basic:
        _refuse_in_clear((query, update, store), "a bearer token" if bearer else
                         "basic-auth credentials", where="graph setting",
                         allowed=lambda: endpoints.allow_plain_http_credentials
                         or _opted_in())
    timeout = _timeout(os.environ.get("CRADLE_GRAPH_TIMEOUT"), endpoints.timeout_s)
    return RemoteGraph(query=query, update=update, store=store, basic=basic, bearer=bearer,
                       timeout_s=timeout, graph_param=endpoints.graph_param)


def check_declared(configured: str | GraphEndpoints | None, *, where: str) -> None:
    """Refuse a ``graph`` setting of ``config.json`` that declares credentials (a user,
    a password or token variable, ``user:password@`` in a URL) for a store it reaches
    over plain ``http://`` on another host — when the file is loaded, not at the first
    request. A setting that does not read is refused where the store is opened."""
    if configured is None:
        return
    try:
        endpoints = parse_setting(configured) if isinstance(configured, str) else configured
        urls = (endpoints.query, endpoints.update, endpoints.store)
        for url in urls:
            urlsplit(url).port  # noqa: B018 -- a URL that does not read: left to the open
    except (InputError, ValueError):
        return
    if endpoints.allow_plain_http_credentials:
        return
    if endpoints.token_env:
        _refuse_in_clear(urls, "a bearer token", where=where, allowed=_never)
    if endpoints.user or endpoints.password_env or any(_USERINFO.search(u) for u in urls):
        _refuse_in_clear(urls, "basic-auth credentials", where=where, allowed=_never)


def loopback(host: str) -> bool:
    """``host`` is this machine by its name alone: ``localhost``, 127.0.0.0/8, ``::1``
    (or an IPv4-mapped loopback address) — no lookup, so no answer of a resolver. As
    written: a name with a trailing dot (``localhost.``, ``127.0.0.1.``) is no address
    literal and not in ``/etc/hosts``, glibc asks DNS for it (tests/security/test_612)."""
    name = host.lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def in_clear(scheme: str, host: str) -> bool:
    """Credentials sent to ``scheme://host`` go in clear to another machine: plain
    ``http://`` to a host not :func:`loopback` — the rule of the graph store's
    credentials (tests/security/test_372) and of a model server's key (test_617)."""
    return scheme.lower() == "http" and not loopback(host)


def opted_in(name: str, error: type[CradleError], where: str) -> bool:
    """The opt-in variable ``name`` (credentials in clear allowed): ``1`` allows, unset,
    empty or ``0`` does not; any other value is refused with ``error`` (a typo must not
    read as either)."""
    value = os.environ.get(name, "")
    if value not in ("", "0", "1"):
        raise error(f"{where}: `{name}` is `{value[:40]}`, not `1` or `0`")
    return value == "1"


def _refuse_in_clear(urls: tuple[str, ...], what: str, *, where: str,
                     allowed: Callable[[], bool]) -> None:
    """Raise :class:`GraphCredentialsInClearError` when one of ``urls`` (checked ones)
    is plain ``http://`` to a host not loopback, unless ``allowed()`` — asked only then:
    an opt-in is read only where it is needed."""
    for url in urls:
        parts = urlsplit(url)
        if in_clear(parts.scheme, parts.hostname or ""):
            if allowed():
                return
            raise GraphCredentialsInClearError(
                f"{where} `{redact_url(url)}`: sends {what} in clear: plain `http://` to "
                f"`{parts.hostname}`, not a loopback address",
                hint="use `https://`; on a network you trust, "
                     "`\"allow_plain_http_credentials\": true` in the home's `graph` "
                     f"setting (`{PLAIN_HTTP_OPT_IN_ENV}=1` with `{GRAPH_URL_ENV}`)")


def _never() -> bool:
    return False


def _opted_in() -> bool:
    """``CRADLE_GRAPH_ALLOW_PLAIN_HTTP_CREDENTIALS`` (:func:`opted_in`)."""
    return opted_in(PLAIN_HTTP_OPT_IN_ENV, GraphCredentialsInClearError, "graph setting")


def _timeout(env: str | None, configured: float) -> float:
    """``CRADLE_GRAPH_TIMEOUT`` when set: seconds, above 0 and at most
    :data:`MAX_TIMEOUT_S` (``nan``, ``inf``, ``-1`` raised out of httpx or the clock)."""
    if not env:
        return configured
    try:
        value = float(env)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_TIMEOUT_S:  # NaN compares false
        raise InputError(f"graph setting: `CRADLE_GRAPH_TIMEOUT` is `{env[:40]}`, not a "
                         f"number of seconds above 0 and at most {MAX_TIMEOUT_S:g}")
    return value


def redact_url(url: str) -> str:
    """``url`` — a setting of one URL or of ``key=URL`` parts — without the user and
    password, the query and the fragment of any URL in it (for messages: a store's key
    may be in either, ``tests/security/test_618``), whether the URL reads or not."""
    return " ".join(_QUERY.sub("", _USERINFO.sub("", part)) for part in url.split())


def graph_setting(configured: str | GraphEndpoints | None) -> GraphEndpoints | None:
    """The remote store the environment or ``configured`` names, or None (embedded)."""
    env = os.environ.get(GRAPH_URL_ENV, "").strip()
    if env:
        return parse_setting(env)
    if isinstance(configured, str):
        return parse_setting(configured)
    return configured


__all__ = ["GRAPH_URL_ENV", "PLAIN_HTTP_OPT_IN_ENV", "GraphEndpoints", "RemoteGraph",
           "check_declared", "from_base", "graph_setting", "in_clear", "loopback", "opted_in",
           "parse_setting", "redact_url", "resolve"]
