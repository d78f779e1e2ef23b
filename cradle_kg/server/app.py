"""The web application: SPARQL endpoint, named queries, JSON API, and the web page.

One library object, a thin web app (datasette's habit): :func:`create_app` wires

* ``/sparql`` — the SPARQL 1.1 Protocol, answered by the query workers in front of the
  app (:mod:`.front`, :mod:`.supervisor`): they accept on the server's socket and pass
  everything that is not a query on to this app, which listens on a private Unix socket;
* ``/queries`` — the named queries (listed; run with parameters bound as RDF terms);
* ``/api`` — the runtime's JSON API (home mode only: serving files has no runtime);
* ``/`` and ``/static`` — the web page (query page, run browser, approvals inbox), every
  asset served from the package: no CDN, the page works offline;
* ``/docs`` — the OpenAPI page: Swagger UI vendored in ``static/swagger`` (no CDN).

Every request passes :mod:`.guard` first: the body cap (413, before authentication and
before any parser) and the security headers (CSP, nosniff, no framing, no referrer).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request, Response
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from ..errors import CradleError
from ..graph.queries import QueryCatalog, bind
from ..graph.sparql_guard import MAX_QUERY_BYTES, MAX_QUERY_DEPTH
from ..home import Home
from ..storage import home_journal_target, is_postgres
from . import api, protocol
from .dataset import PrivateStore, snapshot_files, snapshot_home
from .front import FrontConfig
from .guard import MAX_BODY_BYTES, BodyLimit, SecurityHeaders
from .supervisor import QueryFront, listen, start_fork_server
from .worker import Job, Limits, wire_term

if TYPE_CHECKING:
    from ..loop.runtime import Runtime

STATIC_DIR = Path(__file__).parent / "static"


class ServerSettings(BaseModel):
    """Everything ``cradle-kg serve`` can set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path | None = None
    files: tuple[Path, ...] = ()
    #: seconds a query may run (waiting for a free worker included)
    timeout_seconds: float = Field(10.0, gt=0)
    #: bytes a serialized result may take
    max_result_bytes: int = Field(50_000_000, gt=0)
    workers: int = Field(2, ge=1)
    #: SERVICE endpoints a query may name (none by default: no outbound request)
    allowed_services: tuple[str, ...] = ()
    query_dirs: tuple[Path, ...] = ()
    #: named queries added by packs: pack id -> name -> file
    pack_queries: dict[str, dict[str, Path]] = Field(default_factory=dict)
    cors_origins: tuple[str, ...] = ("*",)
    #: bytes a request body may take (413 before authentication and parsing)
    max_body_bytes: int = Field(MAX_BODY_BYTES, gt=0)
    #: bytes a SPARQL query may take, and how deeply its brackets may nest (400 beyond)
    max_query_bytes: int = Field(MAX_QUERY_BYTES, gt=0)
    max_query_depth: int = Field(MAX_QUERY_DEPTH, gt=0)


def prepare_source(settings: ServerSettings, workdir: Path) -> PrivateStore:
    snapshot = workdir / "store"
    if settings.files:
        return snapshot_files(list(settings.files), snapshot)
    if settings.home is None:
        raise CradleError("serve needs a home or RDF files")
    return snapshot_home(Home(settings.home), snapshot)


def start_front(settings: ServerSettings, host: str, port: int) -> QueryFront:
    """Bind the server's socket, prepare its private store and start the query workers
    (they answer ``/sparql`` as soon as they are up, before the app is built)."""
    start_fork_server()  # first: it imports the workers' modules while the rest happens
    sock = listen(host, port)
    workdir = Path(tempfile.mkdtemp(prefix="cradle-serve-"))
    try:
        # the source is prepared now, so a bad file or home fails before the server listens
        source = prepare_source(settings, workdir)
        journal = None
        follows = not settings.files and settings.home is not None
        if follows and settings.home is not None:
            target = home_journal_target(settings.home)
            journal = None if is_postgres(target) else target
        config = FrontConfig(
            limits=Limits(max_bytes=settings.max_result_bytes,
                          allowed_services=settings.allowed_services,
                          max_query_bytes=settings.max_query_bytes,
                          max_query_depth=settings.max_query_depth),
            timeout=settings.timeout_seconds, app_socket=str(workdir / "app.sock"),
            max_body_bytes=settings.max_body_bytes, follows=follows, journal=journal,
            query_dirs=settings.query_dirs, pack_queries=settings.pack_queries,
            cors_origins=settings.cors_origins, federated=bool(settings.allowed_services))
        front = QueryFront(source, config, sock, workdir=workdir, size=settings.workers)
        front.start()
    except BaseException:
        sock.close()
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return front


def create_app(settings: ServerSettings, front: QueryFront) -> FastAPI:
    """The app behind the query workers; closing it (its lifespan) stops them too."""
    catalog = QueryCatalog.load(settings.query_dirs, packs=settings.pack_queries)
    source = front.source
    runtime: Runtime | None = None
    if not settings.files and settings.home is not None:
        from ..loop.runtime import Runtime

        # graph_sync off: the server never holds the home's on-disk graph store, so the
        # CLI and other runtimes keep it; the workers read the server's private store
        try:
            runtime = Runtime(settings.home, graph_sync=False)
        except BaseException:
            front.close()
            source.close()
            shutil.rmtree(front.workdir, ignore_errors=True)
            raise

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            front.close()
            source.close()
            if runtime is not None:
                runtime.close()
            shutil.rmtree(front.workdir, ignore_errors=True)

    app = FastAPI(title="cradle-kg", version="0.1.0", lifespan=lifespan,
                  docs_url=None, redoc_url=None,  # /docs is served from static/swagger
                  description="Provenance graph of governed agent runs: a read-only SPARQL "
                              "1.1 endpoint, named provenance queries, the runtime's JSON "
                              "API, and a web page to browse runs and approve actions.")
    # CORS as the SPARQL protocol needs it (any origin may read query results; no cookies
    # are ever honoured); the endpoint makes no outbound request, so it is no SSRF oracle
    app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins),
                       allow_methods=["GET", "POST"], allow_headers=["*"],
                       allow_credentials=False)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(SecurityHeaders)  # outermost: on every answer, 413s included
    app.state.front = front
    app.state.catalog = catalog
    app.state.runtime = runtime
    app.include_router(protocol.make_router(front, federated=bool(settings.allowed_services)))
    _queries(app, catalog, front)
    if runtime is not None:
        app.include_router(api.make_router(runtime))
    _web(app, mode="home" if runtime is not None else "files")
    return app


def _queries(app: FastAPI, catalog: QueryCatalog, front: QueryFront) -> None:
    @app.get("/queries", tags=["named queries"], summary="The named queries and their questions")
    def list_queries() -> list[dict[str, Any]]:
        return [q.to_dict() for q in catalog.all()]

    @app.get("/queries/{name}", tags=["named queries"], response_class=Response,
             summary="Run a named query; every other URL parameter binds a query parameter")
    async def run_query(name: str, request: Request) -> Response:
        values = {k: v for k, v in request.query_params.items()
                  if k not in ("format", "output", "results")}
        try:
            query = catalog.get(name)
            bound = bind(query, values)
        except CradleError as exc:
            status = 404 if exc.code == "unknown_name" else 400
            return protocol.refused(status, exc.message)
        formats = tuple(v for k, v in request.query_params.items()
                        if k in ("format", "output", "results"))
        job = Job(query=query.text, accept=request.headers.get("accept"), formats=formats,
                  bound=tuple((k, wire_term(t)) for k, t in bound.items()))
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


__all__ = ["STATIC_DIR", "ServerSettings", "create_app", "prepare_source", "start_front"]
