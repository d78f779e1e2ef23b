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
"""

from __future__ import annotations

import math
import os
import re
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InputError

GRAPH_URL_ENV = "CRADLE_GRAPH_URL"
_URL = r"^https?://\S+$"
#: the longest a request to the store may wait, in seconds (a body gets ten times that)
MAX_TIMEOUT_S = 3600.0
#: a URL's user and password: what follows ``://`` up to the last ``@`` of its authority
_USERINFO = re.compile(r"(?<=://)[^/?#\s]*@")


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
    timeout = _timeout(os.environ.get("CRADLE_GRAPH_TIMEOUT"), endpoints.timeout_s)
    return RemoteGraph(query=query, update=update, store=store, basic=basic, bearer=bearer,
                       timeout_s=timeout, graph_param=endpoints.graph_param)


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
    password of any URL in it (for messages), whether the URL reads or not."""
    return " ".join(_USERINFO.sub("", part) for part in url.split())


def graph_setting(configured: str | GraphEndpoints | None) -> GraphEndpoints | None:
    """The remote store the environment or ``configured`` names, or None (embedded)."""
    env = os.environ.get(GRAPH_URL_ENV, "").strip()
    if env:
        return parse_setting(env)
    if isinstance(configured, str):
        return parse_setting(configured)
    return configured


__all__ = ["GRAPH_URL_ENV", "GraphEndpoints", "RemoteGraph", "from_base", "graph_setting",
           "parse_setting", "redact_url", "resolve"]
