"""The web application: SPARQL endpoint, named queries, JSON API, and the web page.

One library object, a thin web app (datasette's habit): :func:`create_app` wires

* ``/sparql`` — the SPARQL 1.1 Protocol, answered by the query workers in front of the
  app (:mod:`.front`, :mod:`.supervisor`): they accept on the server's socket and pass
  everything that is not a query on to this app, on a private Unix socket (where
  :class:`~.shell.AppShell` answers ``/healthz`` itself and builds this app on the first
  request that needs it: a SPARQL-only deployment never imports FastAPI or the runtime);
* ``/queries`` — the named queries (listed; run with parameters bound as RDF terms);
* ``/api`` — the runtime's JSON API (home mode only: serving files has no runtime);
* ``/`` and ``/static`` — the web page (query page, run browser, approvals inbox), every
  asset served from the package: no CDN, the page works offline;
* ``/docs`` — the OpenAPI page: Swagger UI vendored in ``static/swagger`` (no CDN).

Every request passes :mod:`.guard` first: the body cap (413, before authentication and
before any parser) and the security headers (CSP, nosniff, no framing, no referrer).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request, Response
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from ..errors import CradleError
from ..graph.queries import QueryCatalog
from . import api, protocol
from .guard import BodyLimit, SecurityHeaders
from .launch import ServerSettings, graph_readers, prepare_source, serving_mode, start_front
from .plan import named_job
from .readers import GraphReadGuard
from .supervisor import QueryFront

if TYPE_CHECKING:
    from ..loop.runtime import Runtime

STATIC_DIR = Path(__file__).parent / "static"


def open_runtime(settings: ServerSettings) -> Runtime | None:
    """The runtime behind ``/api`` (home mode), or None when serving files."""
    if settings.files or settings.home is None:
        return None
    from ..loop.runtime import open_home

    # graph_sync off: the server never holds the home's on-disk graph store, so the
    # CLI and other runtimes keep it; the workers read the server's private store
    return open_home(settings.home, graph_sync=False)


def create_app(settings: ServerSettings, front: QueryFront,
               runtime: Runtime | None = None) -> FastAPI:
    """The app behind the query workers (``/api`` over ``runtime`` when one is given).

    It has no lifespan of its own: :class:`~.shell.AppShell` builds it on the first
    request that needs it and closes the front, the private store and the runtime."""
    catalog = QueryCatalog.load(settings.query_dirs, packs=settings.pack_queries)
    app = FastAPI(title="cradle-kg", version="0.1.0",
                  docs_url=None, redoc_url=None,  # /docs is served from static/swagger
                  description="Provenance graph of governed agent runs: a read-only SPARQL "
                              "1.1 endpoint, named provenance queries, the runtime's JSON "
                              "API, and a web page to browse runs and approve actions.")
    # CORS as the SPARQL protocol needs it (any origin may read query results; no cookies
    # are ever honoured); the endpoint makes no outbound request, so it is no SSRF oracle
    app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins),
                       allow_methods=["GET", "POST"], allow_headers=["*"],
                       allow_credentials=False)
    app.add_middleware(GraphReadGuard, readers=graph_readers(settings))
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(SecurityHeaders)  # outermost: on every answer, 413s included
    app.state.front = front
    app.state.catalog = catalog
    app.state.runtime = runtime
    app.include_router(protocol.make_router(front, federated=bool(settings.allowed_services)))
    _queries(app, catalog, front)
    if runtime is not None:
        app.include_router(api.make_router(runtime))
    _web(app, mode=serving_mode(settings))
    return app


def _queries(app: FastAPI, catalog: QueryCatalog, front: QueryFront) -> None:
    @app.get("/queries", tags=["named queries"], summary="The named queries and their questions")
    def list_queries() -> list[dict[str, Any]]:
        return [q.to_dict() for q in catalog.all()]

    @app.get("/queries/{name}", tags=["named queries"], response_class=Response,
             summary="Run a named query; every other URL parameter binds a query parameter")
    async def run_query(name: str, request: Request) -> Response:
        try:
            job = named_job(catalog, name, dict(request.query_params.items()),
                            request.headers.get("accept"))
        except CradleError as exc:
            status = 404 if exc.code == "unknown_name" else 400
            return protocol.refused(status, exc.message)
        return protocol.text_response(await front.arun(job))


def _web(app: FastAPI, *, mode: str) -> None:
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    @app.get("/docs", include_in_schema=False)
    def docs() -> FileResponse:
        return FileResponse(STATIC_DIR / "docs.html", media_type="text/html")

    @app.get("/healthz", tags=["server"], summary="Readiness: workers ready, graph size, mode")
    def healthz(request: Request) -> dict[str, Any]:
        front: QueryFront = request.app.state.front
        return {"mode": mode, **front.health()}


__all__ = ["STATIC_DIR", "ServerSettings", "create_app", "open_runtime", "prepare_source",
           "start_front"]
