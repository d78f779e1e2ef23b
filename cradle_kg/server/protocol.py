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

The query workers answer ``/sparql`` themselves, in front of the app (:mod:`.front`),
with :func:`.plan.plan`; this module is the route the OpenAPI page documents, and the
app's answer to a request that reaches it anyway.
"""

from __future__ import annotations

from typing import Protocol

from fastapi import APIRouter, Request, Response

from .plan import plan, service_description
from .worker import Job, Reply


class Runner(Protocol):
    async def arun(self, job: Job) -> Reply: ...


def text_response(reply: Reply) -> Response:
    # the header is set whole: Starlette would append a second charset to a text/ type
    return Response(reply.body, status_code=reply.status,
                    headers={"content-type": reply.media_type})


def refused(status: int, message: str) -> Response:
    return Response(message, status_code=status,
                    headers={"content-type": "text/plain; charset=utf-8"})


def make_router(runner: Runner, *, federated: bool = False) -> APIRouter:
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
            return text_response(await runner.arun(what))
        if what[0] == "describe":
            doc, media = service_description(endpoint, accept, list(what[1]),
                                             federated=federated)
            return Response(doc, media_type=media)
        return refused(int(what[0]), str(what[1]))

    return router
