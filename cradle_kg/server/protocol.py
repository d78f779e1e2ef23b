"""``/sparql``: the SPARQL 1.1 Protocol (query operation) and a Service Description.

* GET ``?query=``; POST form-encoded (``query=``); POST ``application/sparql-query``;
  ``default-graph-uri`` / ``named-graph-uri`` (repeatable) set the dataset. Without
  them the default graph is the union of all graphs (every run) and each run is a
  named graph.
* GET without a query: the SPARQL 1.1 Service Description, content-negotiated.
* A query's own ``FROM`` / ``FROM NAMED`` wins over the union default graph (the
  protocol's parameters win over both). Relative IRIs resolve against the endpoint's
  URL, as Oxigraph's own server does.
* Read-only: ``update=``, ``application/sparql-update`` and update text are refused
  (403); so is a ``SERVICE`` not allow-listed (403) — decided by the workers on the
  parsed query (:mod:`cradle_kg.graph.sparql_guard`), never on the text.
* Errors are ``text/plain``: 400 the query does not parse, is over the size or nesting
  cap, or fails; 403 refused; 413 request body or result over its cap; 415 a body of
  another content type; 503 over the time limit or no worker free.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import parse_qsl

import pyoxigraph as ox
from fastapi import APIRouter, Request, Response
from starlette.datastructures import URL

from ..errors import QueryError
from .negotiation import graph_format
from .worker import Job, Reply, WorkerPool

SD: Final = "http://www.w3.org/ns/sparql-service-description#"
_FORMAT_PARAMS: Final = ("format", "output", "results")
_RESULT_FORMATS: Final = ("SPARQL_Results_JSON", "SPARQL_Results_XML", "SPARQL_Results_CSV",
                          "SPARQL_Results_TSV", "Turtle", "N-Triples", "RDF_XML", "JSON-LD")


def text_response(reply: Reply) -> Response:
    # the header is set whole: Starlette would append a second charset to a text/ type
    return Response(reply.body, status_code=reply.status,
                    headers={"content-type": reply.media_type})


def refused(status: int, message: str) -> Response:
    return Response(message, status_code=status,
                    headers={"content-type": "text/plain; charset=utf-8"})


def service_description(endpoint: str, accept: str | None, formats: list[str], *,
                        federated: bool = False) -> Response:
    ns = ox.NamedNode
    svc = ns(endpoint)
    dataset = ox.BlankNode()
    default_graph = ox.BlankNode()
    rdf_type = ns("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    triples = [
        ox.Triple(svc, rdf_type, ns(SD + "Service")),
        ox.Triple(svc, ns(SD + "endpoint"), svc),
        ox.Triple(svc, ns(SD + "supportedLanguage"), ns(SD + "SPARQL11Query")),
        ox.Triple(svc, ns(SD + "feature"), ns(SD + "UnionDefaultGraph")),
        ox.Triple(svc, ns(SD + "defaultDataset"), dataset),
        ox.Triple(dataset, rdf_type, ns(SD + "Dataset")),
        ox.Triple(dataset, ns(SD + "defaultGraph"), default_graph),
        ox.Triple(default_graph, rdf_type, ns(SD + "Graph")),
        ox.Triple(svc, ns("http://purl.org/dc/terms/description"), ox.Literal(
            "cradle-kg provenance graph (read-only); the default graph is the union of all "
            "runs, each run a named graph; SERVICE only to allow-listed endpoints")),
    ]
    if federated:  # only when an operator allow-listed SERVICE endpoints
        triples.append(ox.Triple(svc, ns(SD + "feature"), ns(SD + "BasicFederatedQuery")))
    triples += [ox.Triple(svc, ns(SD + "resultFormat"),
                          ns("http://www.w3.org/ns/formats/" + f)) for f in _RESULT_FORMATS]
    fmt, media = graph_format(accept, formats)
    return Response(ox.serialize(triples, format=fmt), media_type=media)


def _params_of(query_string: str, method: str, ctype: str, body: bytes
               ) -> tuple[list[tuple[str, str]], str | None]:
    """All protocol parameters (URL and form) and a query sent as the body, if any."""
    params = list(parse_qsl(query_string, keep_blank_values=True))
    if method != "POST":
        return params, None
    ctype = ctype.split(";")[0].strip().lower()
    text = body.decode("utf-8", errors="replace")
    if ctype == "application/x-www-form-urlencoded":
        params += parse_qsl(text, keep_blank_values=True)
        return params, None
    if ctype == "application/sparql-query":
        return params, text
    if ctype == "application/sparql-update":
        params.append(("update", text))
        return params, None
    raise QueryError(f"unsupported content type `{ctype or '(none)'}`",
                     hint="POST application/x-www-form-urlencoded or application/sparql-query")


def plan(method: str, query_string: str, ctype: str, body: bytes, accept: str | None,
         endpoint: str) -> Job | tuple[int, str] | tuple[str, list[str]]:
    """What a ``/sparql`` request asks: a job, a refusal ``(status, text)``, or the service
    description ``("describe", formats)`` — the same for the route and the fast path."""
    try:
        params, body_query = _params_of(query_string, method, ctype, body)
    except QueryError as exc:
        return 415, exc.message
    formats = [v for k, v in params if k in _FORMAT_PARAMS]
    if any(k in ("update", "using-graph-uri", "using-named-graph-uri") for k, _ in params):
        return 403, "SPARQL Update is refused: this endpoint is read-only"
    queries = [v for k, v in params if k == "query"] + (
        [body_query] if body_query is not None else [])
    if not queries:
        if method == "GET":
            return "describe", formats
        return 400, "no query: send `query=` or an application/sparql-query body"
    if len(queries) > 1:
        return 400, "more than one query in the request"
    defaults = [v for k, v in params if k == "default-graph-uri"]
    named = [v for k, v in params if k == "named-graph-uri"]
    for iri in defaults + named:
        try:
            ox.NamedNode(iri)
        except ValueError as exc:
            return 400, f"graph IRI `{iri}` is not valid: {exc}"
    return Job(query=queries[0], accept=accept, formats=tuple(formats),
               default_graphs=tuple(defaults) if defaults else None,
               named_graphs=tuple(named) if named else None, base_iri=endpoint)


def make_router(pool: WorkerPool, *, federated: bool = False) -> APIRouter:
    router = APIRouter(tags=["SPARQL"])

    @router.api_route("/sparql", methods=["GET", "POST"],
                      summary="SPARQL 1.1 Protocol query endpoint (read-only)",
                      response_class=Response)
    async def sparql(request: Request) -> Response:
        body = await request.body() if request.method == "POST" else b""
        endpoint = str(request.url.replace(query="", fragment=""))
        accept = request.headers.get("accept")
        what = plan(request.method, request.url.query,
                    request.headers.get("content-type", ""), body, accept, endpoint)
        if isinstance(what, Job):
            return text_response(await pool.arun(what))
        if what[0] == "describe":
            return service_description(endpoint, accept, list(what[1]), federated=federated)
        return refused(int(what[0]), str(what[1]))

    return router


class SparqlFastPath:
    """``/sparql`` queries without the web framework: plain ASGI in front of the app.

    A query request (GET or POST to ``/sparql``, no ``Origin`` header — a browser's
    cross-origin request keeps the framework's CORS handling) is planned by :func:`plan`,
    the same function the route uses, and answered straight from the worker's reply.
    Everything else (the service description, errors of the route's own, every other
    path) goes to the app. It sits inside the body cap and the security headers, which
    apply as before."""

    def __init__(self, app: Any, pool: WorkerPool) -> None:
        self.app = app
        self.pool = pool

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (scope["type"] != "http" or scope["path"] != "/sparql"
                or scope["method"] not in ("GET", "POST")):
            await self.app(scope, receive, send)
            return
        headers = {k: v for k, v in scope.get("headers", [])}
        if b"origin" in headers:
            await self.app(scope, receive, send)
            return
        body = b""
        if scope["method"] == "POST":
            message = await receive()  # the body cap buffered it: one message
            body = message.get("body", b"")
        accept = headers.get(b"accept")
        endpoint = str(URL(scope=scope).replace(query="", fragment=""))
        what = plan(scope["method"], scope.get("query_string", b"").decode("latin-1"),
                    headers.get(b"content-type", b"").decode("latin-1"), body,
                    accept.decode("latin-1") if accept is not None else None, endpoint)
        if not isinstance(what, Job):  # the route answers these (same plan, same answer)
            await self.app(scope, _replay(body, receive), send)
            return
        reply = await self.pool.arun(what)
        await send({"type": "http.response.start", "status": reply.status, "headers": [
            (b"content-type", reply.media_type.encode("latin-1")),
            (b"content-length", str(len(reply.body)).encode())]})
        await send({"type": "http.response.body", "body": reply.body})


def _replay(body: bytes, receive: Any) -> Any:
    delivered = False

    async def again() -> Any:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again
