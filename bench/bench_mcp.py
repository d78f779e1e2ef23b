"""What governing adds to an MCP ``tools/call``, side by side in one run, over stdio.

* **direct**: the demo ledger's balance function served by a bare MCP SDK server
  (``mcp.server.lowlevel``), no governance — the same tool function, the same transport;
* **governed**: ``cradle-kg mcp serve --agent agent:ledger-assistant`` on a demo home,
  calling ``demo.ledger.balance`` (read-only) and ``demo.ledger.credit`` (a keyed
  external write: intent journaled before the effect, verified after); and the read again
  with ``--no-graph-sync`` (the graph store caught up later, not after every call).

* **proxy**: ``cradle-kg mcp proxy`` in front of ``examples/notes_server.py`` reading a
  note (a read-only contract) vs the same ``read`` called on that server directly
  (target, issue 12: the proxy adds <= 3 ms p50).

Both servers are real subprocesses driven by the official client (``mcp.client.stdio``).
Target (issue 12): the governed read adds <= 2 ms p50 over the direct call. The same read
through ``Runtime.submit`` in-process (no MCP) is printed too, so the figure splits into
what the governed loop costs and what the MCP gateway itself adds. Prints figures
and the ratios against the direct baseline; asserts nothing.
Run: ``.venv/bin/python bench/bench_mcp.py [--calls N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from cradle_kg.demo.scenario import AGENT, prepare_home


async def _direct_server(home: Path) -> None:
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from cradle_kg.demo.scenario import demo_ledger

    ledger = demo_ledger(home)
    server: Server[Any, Any] = Server("direct")

    @server.list_tools()  # type: ignore[misc]
    async def _list() -> list[types.Tool]:
        return [types.Tool(name="demo.ledger.balance", inputSchema={"type": "object"})]

    @server.call_tool(validate_input=False)  # type: ignore[misc]
    async def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"account": arguments["account"],
                "balance": ledger.balance(arguments["account"])}

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def _timed(params: StdioServerParameters, tool: str, calls: int,
                 arguments: Any) -> list[float]:
    out: list[float] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        await s.list_tools()
        for i in range(calls + 5):
            start = time.perf_counter()
            result = await s.call_tool(tool, arguments(i))
            took = (time.perf_counter() - start) * 1000
            assert not result.isError, result.content
            if i >= 5:  # warm-up
                out.append(took)
    return out


def _in_process(home: Path, calls: int) -> list[float]:
    """The same governed read without MCP: what the runtime itself costs."""
    from cradle_kg import Runtime
    from cradle_kg.integrations.calls import GovernedSession

    out: list[float] = []
    with Runtime(home) as rt:
        session = GovernedSession(rt, AGENT)
        for i in range(calls + 5):
            start = time.perf_counter()
            session.call("demo.ledger.balance", {"account": "acct-1"})
            if i >= 5:
                out.append((time.perf_counter() - start) * 1000)
    return out


NOTES_SERVER = Path(__file__).resolve().parents[1] / "examples" / "notes_server.py"
NOTES_POLICY = ('@id("notes")\n'
                'permit(principal, action, resource) when { context.tool like "notes.*" };\n')


def _proxy_setup(home: Path) -> tuple[StdioServerParameters, StdioServerParameters]:
    """The notes server, direct and behind the proxy (the agent may read `notes:*`)."""
    from cradle_kg.config import load_config, save_config
    from cradle_kg.records import Permission

    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"permissions": (
        *config.permissions, Permission(subject=AGENT, action_type="notes.*",
                                        resource_selector="notes:*"))}))
    (home / "policies" / "notes.cedar").write_text(NOTES_POLICY)
    contracts = home.parent / "notes_contracts.yaml"
    contracts.write_text('tools:\n  read: {side_effect: read_only, target: "notes:{id}"}\n')
    store = home.parent / "notes"
    upstream = [str(NOTES_SERVER), str(store)]
    direct = StdioServerParameters(command=sys.executable, args=upstream)
    proxied = StdioServerParameters(command=sys.executable, args=[
        "-m", "cradle_kg", "mcp", "proxy", "--home", str(home), "--agent", AGENT,
        "--contracts", str(contracts), "--prefix", "notes.", "--", sys.executable, *upstream])
    return direct, proxied


async def _seed_note(params: StdioServerParameters) -> None:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        await s.call_tool("append", {"id": "n1", "text": "hello", "key": "seed"})


def _row(name: str, ms: list[float], base: float) -> str:
    p50 = statistics.median(ms)
    p99 = sorted(ms)[max(0, int(len(ms) * 0.99) - 1)]
    return (f"{name:<28} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms   "
            f"+{p50 - base:6.2f} ms   x{p50 / base:5.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--direct-server", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.direct_server:
        anyio.run(_direct_server, args.direct_server)
        return
    home = Path(tempfile.mkdtemp()) / "home"
    prepare_home(home)
    here = str(Path(__file__).resolve())
    direct = StdioServerParameters(command=sys.executable,
                                   args=[here, "--direct-server", str(home)])
    governed = StdioServerParameters(command=sys.executable, args=[
        "-m", "cradle_kg", "mcp", "serve", "--home", str(home), "--agent", AGENT])
    unsynced = StdioServerParameters(command=sys.executable, args=[
        *governed.args, "--no-graph-sync"])
    read = lambda i: {"account": "acct-1"}  # noqa: E731
    write = lambda i: {"account": f"acct-{i % 50}", "amount": 1}  # noqa: E731
    base_ms = anyio.run(_timed, direct, "demo.ledger.balance", args.calls, read)
    read_ms = anyio.run(_timed, governed, "demo.ledger.balance", args.calls, read)
    write_ms = anyio.run(_timed, governed, "demo.ledger.credit", args.calls, write)
    quick_ms = anyio.run(_timed, unsynced, "demo.ledger.balance", args.calls, read)
    loop_ms = _in_process(home, args.calls)
    note = lambda i: {"id": "n1"}  # noqa: E731
    up_direct, up_proxied = _proxy_setup(home)
    anyio.run(_seed_note, up_direct)
    up_ms = anyio.run(_timed, up_direct, "read", args.calls, note)
    proxy_ms = anyio.run(_timed, up_proxied, "notes.read", args.calls, note)
    base = statistics.median(base_ms)
    print(f"{args.calls} calls each, over stdio, official client; ratios against direct")
    print(_row("direct (MCP SDK, no gates)", base_ms, base))
    print(_row("governed read (balance)", read_ms, base))
    print(_row("governed write (credit)", write_ms, base))
    print(_row("governed read, no graph sync", quick_ms, base))
    print(_row("same read, in-process, no MCP", loop_ms, base))
    mcp_part = statistics.median(read_ms) - statistics.median(loop_ms) - base
    print(f"the MCP gateway's own part of a governed read (p50s): {mcp_part:.2f} ms")
    up = statistics.median(up_ms)
    print("proxy: ratios against the upstream called directly")
    print(_row("upstream read, direct", up_ms, up))
    print(_row("upstream read, via the proxy", proxy_ms, up))


if __name__ == "__main__":
    main()
