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

Two direct baselines: the bare one lists the tool without an output schema; the
like-for-like one lists it as ``mcp serve`` does, with the tool's ``outputSchema`` — and
then the official client checks every result against it (``jsonschema.validate``, which
checks the schema against the 2020-12 metaschema on each call: about 1 ms of the client's
own CPU, whoever serves the tool). The difference against the like-for-like baseline is
what governing adds; the bare baseline shows the client's share.

Every session is open at once and the calls go round-robin (one call of each kind, then
the next), so that the load of a shared machine falls on every row alike.

Beside the wall-clock p50s, the CPU time (user + system, from ``/proc``, in clock ticks:
with 100 calls, to 0.1 ms) that each server process spent per call after the warm-up:
the like-for-like direct server against the governed server that serves only reads, and
the proxy plus its upstream against the upstream called directly — less sensitive than
wall-clock to the other work on a shared machine — and of that, the main thread's: the
event loop, where the MCP server's side of a call runs (the governed loop runs in a
worker thread).
Run: ``.venv/bin/python bench/bench_mcp.py [--calls N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from cradle_kg.demo.scenario import AGENT, prepare_home


async def _direct_server(home: Path, with_schema: bool) -> None:
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from cradle_kg.demo.scenario import demo_ledger

    ledger = demo_ledger(home)
    server: Server[Any, Any] = Server("direct")
    schema = _balance_output_schema(home) if with_schema else None

    @server.list_tools()  # type: ignore[misc]
    async def _list() -> list[types.Tool]:
        return [types.Tool(name="demo.ledger.balance", inputSchema={"type": "object"},
                           outputSchema=schema)]

    if not with_schema:
        @server.call_tool(validate_input=False)  # type: ignore[misc]
        async def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            return {"account": arguments["account"],
                    "balance": ledger.balance(arguments["account"])}
    else:  # the result as the decorator shapes it, without its server-side schema check
        async def _raw(req: types.CallToolRequest) -> types.ServerResult:
            account = (req.params.arguments or {})["account"]
            out = {"account": account, "balance": ledger.balance(account)}
            return types.ServerResult(types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(out, indent=2))],
                structuredContent=out, isError=False))

        server.request_handlers[types.CallToolRequest] = _raw

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _balance_output_schema(home: Path) -> dict[str, Any]:
    """The output schema ``mcp serve`` lists for the demo ledger's balance (written by
    :func:`main` from the runtime's registry)."""
    import json

    return dict(json.loads((home.parent / "balance_output_schema.json").read_text()))


#: (label, server parameters, tool, arguments of call i)
Row = tuple[str, StdioServerParameters, str, Callable[[int], dict[str, Any]]]
_TICK = os.sysconf("SC_CLK_TCK")
#: a descendant process: its argv, its parent's pid, its CPU seconds (user + system)
Proc = tuple[tuple[str, ...], int, float]


def _descendants_cpu() -> dict[int, Proc]:
    """Each descendant process of this one, by pid (``/proc``; empty elsewhere): the
    servers the rows talk to, and what they start (the proxy's upstream)."""
    parents: dict[int, int] = {}
    stats: dict[int, Proc] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            argv = tuple((entry / "cmdline").read_bytes().decode().split("\0")[:-1])
        except (OSError, IndexError):
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        stats[pid] = (argv, int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK)
    mine, grew = {os.getpid()}, True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    return {pid: stats[pid] for pid in mine - {os.getpid()}}


#: per server process (its argv, its parent's pid, its pid), the CPU milliseconds it spent
#: per counted round of calls — over every row it serves (filled by :func:`_timed_rows`)
SERVER_CPU: dict[tuple[tuple[str, ...], int, int], float] = {}
#: the same, of the process's main thread alone (the event loop of our servers)
LOOP_CPU: dict[int, float] = {}


def _main_thread_cpu(pids: list[int]) -> dict[int, float]:
    """The CPU seconds (user + system) of each process's main thread (``/proc``; empty
    elsewhere)."""
    out: dict[int, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / _TICK
    return out


async def _timed_rows(rows: list[Row], calls: int,
                      extra: Callable[[], None] | None = None) -> dict[str, list[float]]:
    """Open every row's session, then call round-robin: one call of each row, again."""
    out: dict[str, list[float]] = {label: [] for label, *_ in rows}
    if extra is not None:
        out["in-process"] = []
        out["in-process CPU"] = []
    async with contextlib.AsyncExitStack() as stack:
        sessions: dict[tuple[str, ...], ClientSession] = {}
        for _label, params, _tool, _args in rows:
            key = (params.command, *params.args)
            if key not in sessions:
                read, write = await stack.enter_async_context(stdio_client(params))
                s = await stack.enter_async_context(ClientSession(read, write))
                await s.initialize()
                await s.list_tools()
                sessions[key] = s
        before: dict[int, Proc] = {}
        for i in range(calls + 5):
            if i == 5:  # warm-up done: the servers' CPU from here
                before = _descendants_cpu()
                loops = _main_thread_cpu(list(before))
            for label, params, tool, arguments in rows:
                s = sessions[(params.command, *params.args)]
                start = time.perf_counter()
                result = await s.call_tool(tool, arguments(i))
                took = (time.perf_counter() - start) * 1000
                assert not result.isError, result.content
                if i >= 5:  # warm-up
                    out[label].append(took)
            if extra is not None:
                start, cpu = time.perf_counter(), time.thread_time()
                extra()
                if i >= 5:
                    out["in-process"].append((time.perf_counter() - start) * 1000)
                    out["in-process CPU"].append((time.thread_time() - cpu) * 1000)
        after = _descendants_cpu()
        loops_after = _main_thread_cpu(list(after))
        for pid, (argv, ppid, spent) in after.items():
            if pid in before:
                SERVER_CPU[(argv, ppid, pid)] = (spent - before[pid][2]) * 1000 / calls
            if pid in loops and pid in loops_after:
                LOOP_CPU[pid] = (loops_after[pid] - loops[pid]) * 1000 / calls
    return out


def _cpu_of(params: StdioServerParameters, parent: int | None = None) -> tuple[float, int]:
    """CPU ms per round of the server process started by ``params`` (by this process, or
    by the process ``parent``), and its pid; (nan, 0) where ``/proc`` is not readable."""
    argv = (params.command, *params.args)
    for (seen, ppid, pid), ms in SERVER_CPU.items():
        if seen == argv and ppid == (os.getpid() if parent is None else parent):
            return ms, pid
    return float("nan"), 0


class _InProcess:
    """The same governed read without MCP: what the runtime itself costs."""

    def __init__(self, home: Path) -> None:
        from cradle_kg import Runtime
        from cradle_kg.integrations.calls import GovernedSession

        self.rt = Runtime(home)
        self.session = GovernedSession(self.rt, AGENT)

    def __call__(self) -> None:
        out = self.session.call("demo.ledger.balance", {"account": "acct-1"})
        assert not out.is_error, out.text


#: the servers run in this process's environment (the SDK passes only a few variables by
#: default: a PYTHONPATH or a CRADLE_* setting would not reach them)
_ENV = dict(os.environ)
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
    direct = StdioServerParameters(command=sys.executable, env=_ENV, args=upstream)
    proxied = StdioServerParameters(command=sys.executable, env=_ENV, args=[
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
    return (f"{name:<31} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms   "
            f"+{p50 - base:6.2f} ms   x{p50 / base:5.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--direct-server", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--with-schema", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.direct_server:
        anyio.run(_direct_server, args.direct_server, args.with_schema)
        return
    root = Path(tempfile.mkdtemp())
    # one home per governing process, as deployed: processes sharing a home each catch up
    # with the others' events on every call (that cost is measured by bench_core's writers)
    home, home_unsynced, home_inproc = (root / n for n in ("home", "home-unsynced", "home-inproc"))
    for h in (home, home_unsynced, home_inproc):
        prepare_home(h)
    here = str(Path(__file__).resolve())
    direct = StdioServerParameters(command=sys.executable, env=_ENV,
                                   args=[here, "--direct-server", str(home)])
    alike = StdioServerParameters(command=sys.executable, env=_ENV,
                                  args=[here, "--direct-server", str(home), "--with-schema"])
    governed = StdioServerParameters(command=sys.executable, env=_ENV, args=[
        "-m", "cradle_kg", "mcp", "serve", "--home", str(home), "--agent", AGENT])
    unsynced = StdioServerParameters(command=sys.executable, env=_ENV, args=[
        "-m", "cradle_kg", "mcp", "serve", "--home", str(home_unsynced), "--agent", AGENT,
        "--no-graph-sync"])
    read = lambda i: {"account": "acct-1"}  # noqa: E731
    write = lambda i: {"account": f"acct-{i % 50}", "amount": 1}  # noqa: E731
    in_process = _InProcess(home_inproc)
    (home.parent / "balance_output_schema.json").write_text(json.dumps(
        in_process.rt.tools.get("demo.ledger.balance").output_model.model_json_schema()))
    try:
        ms = anyio.run(_timed_rows, [
            ("direct, bare", direct, "demo.ledger.balance", read),
            ("direct, like-for-like", alike, "demo.ledger.balance", read),
            ("governed read", governed, "demo.ledger.balance", read),
            ("governed write", governed, "demo.ledger.credit", write),
            ("governed read, unsynced", unsynced, "demo.ledger.balance", read),
        ], args.calls, in_process)
    finally:
        in_process.rt.close()
    note = lambda i: {"id": "n1"}  # noqa: E731
    up_direct, up_proxied = _proxy_setup(home)
    anyio.run(_seed_note, up_direct)
    proxy = anyio.run(_timed_rows, [("upstream read, direct", up_direct, "read", note),
                                    ("upstream read, via the proxy", up_proxied, "notes.read",
                                     note)], args.calls)
    bare, base = (statistics.median(ms[k]) for k in ("direct, bare", "direct, like-for-like"))
    load = os.getloadavg()[0]
    print(f"{args.calls} calls each, over stdio, official client, round-robin; load average "
          f"{load:.1f} on {os.cpu_count()} cores; ratios against the like-for-like direct call")
    print(_row("direct, bare (no outputSchema)", ms["direct, bare"], base))
    print(_row("direct, like-for-like", ms["direct, like-for-like"], base))
    print(_row("governed read (balance)", ms["governed read"], base))
    print(_row("governed write (credit)", ms["governed write"], base))
    print(_row("governed read, no graph sync", ms["governed read, unsynced"], base))
    print(_row("same read, in-process, no MCP", ms["in-process"], base))
    print(f"the client's own check of the output schema (like-for-like - bare): "
          f"{base - bare:.2f} ms")
    mcp_part = statistics.median(ms["governed read"]) - statistics.median(ms["in-process"]) - base
    print(f"the MCP gateway's own part of a governed read (p50s): {mcp_part:.2f} ms")
    cpu = {label: _cpu_of(params)[0] for label, params in (
        ("direct", alike), ("governed", governed), ("unsynced", unsynced))}
    print(f"CPU per call of each server process (/proc, {args.calls} calls after the warm-up): "
          f"like-for-like direct {cpu['direct']:.2f} ms; governed read, no graph sync (reads "
          f"only) {cpu['unsynced']:.2f} ms: {cpu['unsynced'] - cpu['direct']:+.2f} ms; the "
          f"governed server (one read and one write a round) {cpu['governed']:.2f} ms")
    loop_cpu = statistics.median(ms["in-process CPU"])
    print(f"the same read in-process: {loop_cpu:.2f} ms of its thread's CPU (p50); the "
          f"gateway's own CPU, governed read - direct - in-process: "
          f"{cpu['unsynced'] - cpu['direct'] - loop_cpu:+.2f} ms")
    up = statistics.median(proxy["upstream read, direct"])
    print("proxy: ratios against the upstream called directly")
    print(_row("upstream read, direct", proxy["upstream read, direct"], up))
    print(_row("upstream read, via the proxy", proxy["upstream read, via the proxy"], up))
    direct_cpu, _ = _cpu_of(up_direct)
    proxy_cpu, proxy_pid = _cpu_of(up_proxied)
    behind_cpu, _ = _cpu_of(up_direct, parent=proxy_pid)
    print(f"CPU per call: the upstream called directly {direct_cpu:.2f} ms; via the proxy, "
          f"the proxy {proxy_cpu:.2f} ms + its upstream {behind_cpu:.2f} ms: "
          f"{proxy_cpu + behind_cpu - direct_cpu:+.2f} ms")
    serve_loop = LOOP_CPU.get(_cpu_of(unsynced)[1], float("nan"))
    proxy_loop = LOOP_CPU.get(proxy_pid, float("nan"))
    print(f"of which the main thread (the event loop: the MCP server's side): governed read, "
          f"no graph sync {serve_loop:.2f} ms; the proxy {proxy_loop:.2f} ms")


if __name__ == "__main__":
    main()
