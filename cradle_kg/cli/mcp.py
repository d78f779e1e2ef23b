"""``cradle-kg mcp``: put an MCP client (or an existing MCP server) behind the runtime.

    cradle-kg mcp serve --home H --agent agent:x                stdio, as agent:x
    cradle-kg mcp serve --home H --transport streamable-http --port 8765
                                                                HTTP, bearer tokens
    cradle-kg mcp proxy --home H --contracts c.yaml -- python server.py
                                                                an upstream server, governed
    cradle-kg mcp pins --contracts c.yaml --show -- python server.py
                                                                its tools' definitions, pins
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import CradleError, InputError
from ..home import resolve_home
from ..integrations.http_guard import MAX_SESSIONS_PER_AGENT
from .common import HomeOpt, clean, clean_text, err_console, fail

if TYPE_CHECKING:
    from ..integrations.contracts import Contracts
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
SessionsOpt = Annotated[int, typer.Option(
    "--max-sessions-per-agent", min=1,
    help="Open MCP sessions one agent may hold at once (HTTP); the next is refused (429) "
         "until one is closed or ends idle.")]
AllowHostOpt = Annotated[list[str] | None, typer.Option(
    "--allow-host", help="A host name requests may give besides the loopback names of a "
                         "loopback server (a reverse proxy's), repeatable; on another "
                         "address, the only names answered (HTTP; 421 otherwise).",
    show_default=False)]
AllowOriginOpt = Annotated[list[str] | None, typer.Option(
    "--allow-origin", help="A web origin whose pages may call the server, repeatable; `*`: "
                           "any (HTTP; pages of the server's own names may, others get "
                           "403).", show_default=False)]
SyncOpt = Annotated[bool, typer.Option(
    "--graph-sync/--no-graph-sync", help="Update the graph store after every call (off: the "
                                         "journal stays the truth; `cradle-kg graph sync` "
                                         "catches the graph up later).")]


@dataclass(frozen=True)
class _Browsers:
    """``--allow-host`` and ``--allow-origin``: :mod:`cradle_kg.server.hosts`."""

    hosts: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()


def _gateway(rt: Runtime, bind: str, browsers: _Browsers, command: str,
             **app: Any) -> Any:
    """The MCP app of ``mcp serve`` / ``mcp proxy`` on HTTP: the names and pages it answers
    first (421, 403), then the gateway (:func:`.mcp_server.http_app`: the token, the
    strict JSON loader before the SDK's, the sessions)."""
    from ..integrations import mcp_server
    from ..server.hosts import BrowserGuard, answered_names

    return BrowserGuard(mcp_server.http_app(rt, **app), hosts=answered_names(bind, browsers.hosts),
                        origins=browsers.origins, command=command)


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
          port: PortOpt = 8765, approval_wait: WaitOpt = 0.0, graph_sync: SyncOpt = True,
          max_sessions_per_agent: SessionsOpt = MAX_SESSIONS_PER_AGENT,
          allow_host: AllowHostOpt = None, allow_origin: AllowOriginOpt = None) -> None:
    """Serve the home's registered tools to any MCP client; every call is governed."""
    _check_transport(transport, agent)
    browsers = _Browsers(tuple(allow_host or ()), tuple(allow_origin or ()))
    root, rt = _open(home, graph_sync)
    with rt:
        try:
            _run(rt, root, transport, agent, host, port, approval_wait,
                 max_sessions_per_agent, browsers)
        except CradleError as exc:
            fail(exc)


def _open(home: Path | None, graph_sync: bool) -> tuple[Path, Runtime]:
    from ..loop.runtime import open_home

    root = resolve_home(home)
    try:
        return root, open_home(root, graph_sync=graph_sync)
    except CradleError as exc:
        fail(exc)


def _run(rt: Runtime, root: Path, transport: Transport, agent: str | None, host: str,
         port: int, wait: float, sessions: int, browsers: _Browsers) -> None:
    import anyio

    from ..integrations import mcp_server

    if transport is Transport.STDIO:
        assert agent is not None
        anyio.run(lambda: mcp_server.serve_stdio(rt, agent, approval_wait=wait,
                                                 home_hint=str(root)))
        return
    import uvicorn

    from ..server.deadlines import raise_open_files, request_deadlines

    raise_open_files()
    app = _gateway(rt, host, browsers, "cradle-kg mcp serve", approval_wait=wait,
                   home_hint=str(root), max_sessions_per_agent=sessions)
    err_console.print(f"cradle-kg MCP (streamable HTTP) at http://{host}:{port}/mcp",
                      highlight=False)
    uvicorn.run(app, host=host, port=port, log_level="warning", http=request_deadlines())


ContractsOpt = Annotated[Path, typer.Option(
    "--contracts", help="YAML file: the contract of each upstream tool (side effect, "
                        "idempotency, target, verifying read).", show_default=False)]
PrefixOpt = Annotated[str, typer.Option("--prefix", help="Prefix of the upstream's tool ids.")]
UndeclaredOpt = Annotated[bool, typer.Option(
    "--allow-undeclared-read", help="Serve tools without a contract as read-only when the "
                                    "upstream annotates them readOnlyHint (and not "
                                    "destructiveHint); others are never served without a "
                                    "contract (default: none served).")]
UpstreamOpt = Annotated[str | None, typer.Option(
    "--upstream", help="URL of a streamable-HTTP upstream (instead of a command).",
    show_default=False)]
CommandArg = Annotated[list[str] | None, typer.Argument(
    help="The upstream MCP server to start (after `--`), spoken to on stdio.",
    show_default=False)]


@mcp_app.command("proxy")
def proxy(contracts: ContractsOpt, command: CommandArg = None, home: HomeOpt = None,
          prefix: PrefixOpt = "upstream.", allow_undeclared_read: UndeclaredOpt = False,
          upstream: UpstreamOpt = None, agent: AgentOpt = None,
          transport: TransportOpt = Transport.STDIO, host: HostOpt = "127.0.0.1",
          port: PortOpt = 8765, approval_wait: WaitOpt = 0.0, graph_sync: SyncOpt = True,
          max_sessions_per_agent: SessionsOpt = MAX_SESSIONS_PER_AGENT,
          allow_host: AllowHostOpt = None, allow_origin: AllowOriginOpt = None) -> None:
    """Govern an existing MCP server: its declared tools, served through both gates."""
    _check_transport(transport, agent)
    declared = _declared(contracts, command, upstream,
                         "cradle-kg mcp proxy --contracts c.yaml --agent A -- python s.py")
    root, rt = _open(home, graph_sync)
    with rt:
        opts = _ProxyOpts(command or None, upstream, prefix, allow_undeclared_read, agent,
                          transport, host, port, approval_wait, str(root),
                          max_sessions_per_agent,
                          _Browsers(tuple(allow_host or ()), tuple(allow_origin or ())))
        error = _run_proxy(rt, declared, opts)
        if error is not None:
            fail(error)


@dataclass(frozen=True)
class _ProxyOpts:
    command: list[str] | None
    url: str | None
    prefix: str
    allow_undeclared_read: bool
    agent: str | None
    transport: Transport
    host: str
    port: int
    wait: float
    home: str
    sessions: int = MAX_SESSIONS_PER_AGENT
    browsers: _Browsers = _Browsers()


def _declared(contracts: Path, command: list[str] | None, upstream: str | None,
              example: str) -> Contracts:
    """The operator's contracts, once the upstream is named exactly once (a command after
    ``--`` or ``--upstream URL``); else a one-line error, exit 2."""
    from ..integrations.contracts import load_contracts

    if bool(command) == bool(upstream):
        fail(InputError("name the upstream once: a command after `--`, or `--upstream URL`",
                        hint=example))
    try:
        return load_contracts(contracts)
    except CradleError as exc:
        fail(exc)


def _run_proxy(rt: Runtime, declared: Contracts, o: _ProxyOpts) -> CradleError | None:
    """Serve until the client leaves; a refusal at start is returned, not raised through
    the task groups."""
    import anyio

    from ..integrations import mcp_server, proxy

    failed: list[CradleError] = []

    async def main() -> None:
        async with proxy.connect(o.command, o.url, rt.config.input_limits) as (up, tools):
            try:
                ids = proxy.register(rt, up, tools, declared, prefix=o.prefix,
                                     allow_undeclared_read=o.allow_undeclared_read)
            except CradleError as exc:
                failed.append(exc)
                return
            if o.allow_undeclared_read and (left := proxy.undeclared(tools, declared)):
                err_console.print("not served (no contract and not annotated read-only "
                                  "by the upstream, or not an MCP tool name): "
                                  + ", ".join(clean(n) for n in left), highlight=False)
            # the intents a crash left: the upstream's tools are known only now
            await anyio.to_thread.run_sync(rt.recover)
            if o.transport is Transport.STDIO:
                assert o.agent is not None
                await mcp_server.serve_stdio(rt, o.agent, approval_wait=o.wait,
                                             home_hint=o.home, only=ids, name="cradle-kg-proxy")
                return
            import uvicorn

            from ..server.deadlines import raise_open_files, request_deadlines

            raise_open_files()
            app = _gateway(rt, o.host, o.browsers, "cradle-kg mcp proxy", approval_wait=o.wait,
                           home_hint=o.home, only=ids, name="cradle-kg-proxy",
                           max_sessions_per_agent=o.sessions)
            err_console.print(f"cradle-kg MCP proxy at http://{o.host}:{o.port}/mcp",
                              highlight=False)
            await uvicorn.Server(uvicorn.Config(app, host=o.host, port=o.port,
                                                log_level="warning",
                                                http=request_deadlines())).serve()

    try:
        anyio.run(main)
    except CradleError as exc:
        return exc
    return failed[0] if failed else None


ShowOpt = Annotated[bool, typer.Option(
    "--show", help="Print each tool's definition (what a pin covers) to review it.")]


@mcp_app.command("pins")
def pins(contracts: ContractsOpt, command: CommandArg = None, upstream: UpstreamOpt = None,
         show: ShowOpt = False, home: HomeOpt = None) -> None:
    """Print the pin of each upstream tool the contracts declare (and whether it matches).

    A contract's `pin:` is the operator's review of the upstream tool's definition — its
    description, title, schemas and annotations: the proxy shows the agent the upstream's
    own description and input schema only under a pin, and refuses to start when the
    upstream's definition differs from it. Review with `--show`, then copy the pin into
    the contract. Exit 1 when a pinned tool changed or a declared tool is not offered.
    Pins are the upstream's and the contracts' alone; ``--home`` is accepted like
    everywhere else."""
    import json

    import anyio

    from ..integrations import proxy, upstream_pins
    declared = _declared(contracts, command, upstream,
                         "cradle-kg mcp pins --contracts c.yaml -- python s.py")
    lines: list[str] = []
    bad = False

    async def main() -> None:
        nonlocal bad
        async with proxy.connect(command or None, upstream) as (_, tools):
            offered = {t.name: t for t in tools}
            for name, contract in declared.tools.items():
                tool = offered.get(name)
                if tool is None:
                    lines.append(f"{name}: not offered by the upstream")
                    bad = True
                    continue
                pin = upstream_pins.pin_of(tool)
                state = ("not pinned" if contract.pin is None else "pinned, matches"
                         if contract.pin == pin else f"CHANGED (pinned {contract.pin})")
                bad = bad or state.startswith("CHANGED")
                lines.append(f"{name}:\n  pin: \"{pin}\"   # {state}")
                if show:  # ASCII only: a control or bidi character is shown escaped
                    lines.append(json.dumps(upstream_pins.definition_of(tool), indent=2,
                                            ensure_ascii=True, sort_keys=True))

    try:
        anyio.run(main)
    except CradleError as exc:
        fail(exc)
    typer.echo("\n".join(clean_text(line) for entry in lines for line in entry.splitlines()))
    if bad:
        raise typer.Exit(1)


def install(app: typer.Typer) -> None:
    app.add_typer(mcp_app, name="mcp")
