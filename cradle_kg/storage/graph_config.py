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

import os
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InputError

GRAPH_URL_ENV = "CRADLE_GRAPH_URL"
_URL = r"^https?://\S+$"


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
    timeout_s: float = Field(default=30.0, gt=0)
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
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
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
                raise InputError(f"graph setting `{item}`: expected query=URL, update=URL "
                                 "or store=URL")
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
    timeout = float(os.environ.get("CRADLE_GRAPH_TIMEOUT") or endpoints.timeout_s)
    return RemoteGraph(query=query, update=update, store=store, basic=basic, bearer=bearer,
                       timeout_s=timeout, graph_param=endpoints.graph_param)


def redact_url(url: str) -> str:
    """``url`` without its password (for messages)."""
    return " ".join(_strip_userinfo(part)[0] if "://" in part else part
                    for part in url.split())


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
