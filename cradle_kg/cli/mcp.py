"""``cradle-kg mcp``: put an MCP client (or an existing MCP server) behind the runtime.

    cradle-kg mcp serve --home H --agent agent:x                stdio, as agent:x
    cradle-kg mcp serve --home H --transport streamable-http --port 8765
                                                                HTTP, bearer tokens
    cradle-kg mcp proxy --home H --contracts c.yaml -- python server.py
                                                                an upstream server, governed
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import CradleError, InputError
from ..home import resolve_home
from .common import HomeOpt, err_console, fail

if TYPE_CHECKING:
    from ..loop.runtime import Runtime

mcp_app = typer.Typer(help="Serve the home's tools over MCP, or govern an MCP server.",
                      no_args_is_help=True)


class Transport(StrEnum):
    STDIO = "stdio"
    STREAMABLE_HTTP = "streamable-http"


AgentOpt = Annotated[str | None, typer.Option(
    "--agent", help="The configured agent this stdio session acts as (stdio only; on HTTP "
                    "the bearer token says who calls).", show_default=False)]
TransportOpt = Annotated[Transport, typer.Option("--transport", help="How clients connect.")]
HostOpt = Annotated[str, typer.Option("--host", help="Address to listen on (HTTP).")]
PortOpt = Annotated[int, typer.Option("--port", help="Port to listen on (HTTP).")]
WaitOpt = Annotated[float, typer.Option(
    "--approval-wait", help="Seconds a call that needs an approval waits for the approver, "
                            "with progress notifications (clients that send a progress "
                            "token); 0: answer `awaiting_approval` at once.")]
SyncOpt = Annotated[bool, typer.Option(
    "--graph-sync/--no-graph-sync", help="Update the graph store after every call (off: the "
                                         "journal stays the truth; `cradle-kg graph sync` "
                                         "catches the graph up later).")]


def _check_transport(transport: Transport, agent: str | None) -> None:
    if transport is Transport.STDIO and not agent:
        fail(InputError("`--agent` is required on stdio: a session acts as one configured "
                        "agent", hint="cradle-kg mcp serve --agent AGENT_ID --home H"))
    if transport is Transport.STREAMABLE_HTTP and agent:
        fail(InputError("`--agent` is for stdio only: on HTTP the bearer token says who calls",
                        hint="cradle-kg api-token issue AGENT_ID --home H"))


@mcp_app.command("serve")
def serve(home: HomeOpt = None, agent: AgentOpt = None,
          transport: TransportOpt = Transport.STDIO, host: HostOpt = "127.0.0.1",
          port: PortOpt = 8765, approval_wait: WaitOpt = 0.0, graph_sync: SyncOpt = True
          ) -> None:
    """Serve the home's registered tools to any MCP client; every call is governed."""
    from ..loop.runtime import Runtime

    _check_transport(transport, agent)
    root = resolve_home(home)
    try:
        rt = Runtime(root, graph_sync=graph_sync)
    except CradleError as exc:
        fail(exc)
    with rt:
        try:
            _run(rt, root, transport, agent, host, port, approval_wait)
        except CradleError as exc:
            fail(exc)


def _run(rt: Runtime, root: Path, transport: Transport, agent: str | None, host: str,
         port: int, wait: float) -> None:
    import anyio

    from ..integrations import mcp_server

    if transport is Transport.STDIO:
        assert agent is not None
        anyio.run(lambda: mcp_server.serve_stdio(rt, agent, approval_wait=wait,
                                                 home_hint=str(root)))
        return
    import uvicorn

    app = mcp_server.http_app(rt, approval_wait=wait, home_hint=str(root))
    err_console.print(f"cradle-kg MCP (streamable HTTP) at http://{host}:{port}/mcp",
                      highlight=False)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def install(app: typer.Typer) -> None:
    app.add_typer(mcp_app, name="mcp")
