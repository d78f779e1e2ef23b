"""``cradle-kg serve``: the SPARQL endpoint, JSON API and web page; ``api-token``: agent tokens.

    cradle-kg serve --home H                      the home's graph, its runtime's API
    cradle-kg serve run1.trig run2.nq             exported RDF files, read-only, no runtime
    cradle-kg api-token issue agent:x --home H    a bearer token for an agent (printed once)
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ..config import load_config
from ..errors import CradleError
from ..home import Home, resolve_home
from .common import HomeOpt, clean, console, fail


class GraphReadersChoice(StrEnum):
    """``--graph-readers``: :mod:`cradle_kg.server.readers`."""

    ANYONE = "anyone"
    APPROVERS = "approvers"
    TOKENS = "tokens"


token_app = typer.Typer(help="Bearer tokens of agents for the JSON API (hashes kept).",
                        no_args_is_help=True)


def serve(
    files: Annotated[list[Path] | None, typer.Argument(
        help="RDF files to serve instead of a home (TriG, N-Quads, Turtle, N-Triples, "
             "JSON-LD).", show_default=False)] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 7878,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds a query may run.")] = 10.0,
    max_result_bytes: Annotated[int, typer.Option(
        "--max-result-bytes", help="Largest serialized result, in bytes.")] = 50_000_000,
    max_worker_memory: Annotated[int, typer.Option(
        "--max-worker-memory", min=1, help="Most resident memory a query worker may hold "
        "while it runs queries, in bytes (503 and the worker replaced beyond).")
    ] = 2_147_483_648,
    workers: Annotated[int, typer.Option(
        "--workers", help="Query worker processes (each answers queries on the server's "
                          "port; one per core).")] = 2,
    max_body_bytes: Annotated[int, typer.Option(
        "--max-body-bytes", help="Largest request body, in bytes (413 beyond).")] = 1_048_576,
    max_query_bytes: Annotated[int, typer.Option(
        "--max-query-bytes", help="Largest SPARQL query, in bytes (400 beyond).")] = 100_000,
    max_query_depth: Annotated[int, typer.Option(
        "--max-query-depth", help="Deepest bracket nesting of a query (400 beyond).")] = 128,
    max_query_patterns: Annotated[int, typer.Option(
        "--max-query-patterns", min=1, help="Most triple patterns and path steps a query "
        "may join (400 beyond: the engine plans many for longer than a query runs).")] = 100,
    max_query_operators: Annotated[int, typer.Option(
        "--max-query-operators", min=1, help="Most operators a query may chain "
        "(|| && ! = < > + - * / | ^; 400 beyond).")] = 1000,
    allow_service: Annotated[list[str] | None, typer.Option(
        "--allow-service", help="A SERVICE endpoint queries may call, repeatable "
                                "(none by default: no outbound request).")] = None,
    queries: Annotated[list[Path] | None, typer.Option(
        "--queries", help="A folder of extra named queries, repeatable.")] = None,
    packs: Annotated[bool, typer.Option(
        "--packs/--no-packs", help="Include the named queries of installed packs.")] = True,
    cors_origin: Annotated[list[str] | None, typer.Option(
        "--cors-origin", help="A web origin whose pages may read the answers (CORS), "
                              "repeatable; `*`: any (none by default).")] = None,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="A host name requests may give besides the loopback names of "
                             "a loopback server (a reverse proxy's), repeatable; on another "
                             "address, the only names answered.")] = None,
    header_timeout: Annotated[float, typer.Option(
        "--header-timeout", min=0.1, help="Seconds a client has to send a request's headers "
                                          "(408 and the connection closed beyond).")] = 10.0,
    graph_readers: Annotated[GraphReadersChoice, typer.Option(
        "--graph-readers", help="Who may read the graph at /sparql and /queries: anyone "
                                "who reaches the server (the default), an approver's token, "
                                "or any token of the home (401 otherwise).")] =
    GraphReadersChoice.ANYONE,
    home: HomeOpt = None,
) -> None:
    """Serve the graph: SPARQL 1.1 endpoint at /sparql, web page at /, API docs at /docs."""
    from ..server import ServerSettings, start_front
    from ..server.deadlines import raise_open_files
    from ..server.hosts import answered_names
    from .common import pack_queries

    raise_open_files()  # first: the workers' fork server inherits it

    settings = ServerSettings(
        pack_queries=pack_queries(None if files else home) if packs else {},
        home=None if files else resolve_home(home), files=tuple(files or ()),
        timeout_seconds=timeout, max_result_bytes=max_result_bytes, workers=workers,
        max_worker_memory=max_worker_memory,
        allowed_services=tuple(allow_service or ()), query_dirs=tuple(queries or ()),
        max_body_bytes=max_body_bytes, max_query_bytes=max_query_bytes,
        max_query_depth=max_query_depth, max_query_patterns=max_query_patterns,
        max_query_operators=max_query_operators,
        header_seconds=header_timeout,
        cors_origins=tuple(cors_origin or ()),
        allowed_hosts=answered_names(host, allow_host or ()), graph_readers=graph_readers.value)
    try:
        # the query workers answer /sparql on the port first; the server process answers
        # /healthz and builds the app (API, page) on the first request that needs it
        front = start_front(settings, host, port)
        import uvicorn

        from ..server.shell import AppShell

        shell = AppShell(settings, front)
    except OSError as exc:
        fail(CradleError(f"cannot listen on `{host}:{port}`: {exc.strerror or exc}"))
    except CradleError as exc:
        fail(exc)
    what = ", ".join(str(f) for f in files) if files else f"home {settings.home}"
    console.print(f"serving {what} at http://{host}:{port}/ (SPARQL: /sparql, API: /docs)",
                  highlight=False)
    uvicorn.run(shell, uds=front.config.app_socket, log_level="warning", lifespan="on")


@token_app.command("issue")
def token_issue(agent: Annotated[str, typer.Argument(help="A declared agent id.")],
                host: Annotated[bool, typer.Option(
                    "--host", help="The host application's token for the agent: over MCP "
                                   "(streamable HTTP) its calls may carry the host's facts "
                                   "and the user's input in `_meta` (`cradle-kg/facts`, "
                                   "`cradle-kg/input`), which an agent's token may not.")
                ] = False,
                home: HomeOpt = None) -> None:
    """Issue a new token for an agent (replacing its previous one); printed only once."""
    from ..server.auth import issue_agent_token

    h = Home(resolve_home(home))
    try:
        token = issue_agent_token(h, load_config(h.config), agent, host=host)
    except CradleError as exc:
        fail(exc)
    console.print(token, highlight=False, soft_wrap=True)


@token_app.command("revoke")
def token_revoke(agent: Annotated[str, typer.Argument(help="The agent id.")],
                 home: HomeOpt = None) -> None:
    """Revoke an agent's token."""
    from ..server.auth import revoke_agent_token

    if not revoke_agent_token(Home(resolve_home(home)), agent):
        console.print(f"no token for {clean(agent)}", highlight=False)
        raise typer.Exit(1)
    console.print(f"revoked the token of {clean(agent)}", highlight=False)


def install(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.add_typer(token_app, name="api-token")
