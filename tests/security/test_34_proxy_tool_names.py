"""The names an upstream MCP server lists are shown as text, and served only if MCP names.

Finding: ``cradle-kg mcp proxy --allow-undeclared-read`` prints the upstream's tools it
does not serve ("not served (no contract, …): a, b") with the names as the upstream
listed them, through Rich markup. A name holding markup (``[bold]…``) was rendered as
markup, and one holding a stray closing tag (``[/x]``) raised ``MarkupError``: the proxy
died at start (the client saw "connection closed") for a name the operator never chose.
(Escape sequences and bidi overrides in a name were already stripped by the CLI's
console, its last line of defence: that holds, checked here.) And such names were
served: an upstream tool annotated read-only under a name holding markup or a bidi
override was registered as a tool id of the runtime and listed to the agent's MCP client
(seen while writing this test, before the name rule). The
names are now printed through :func:`clean`, as every recorded value the CLI prints is
(``test_10``, ``test_24``), and only MCP tool names (``[A-Za-z0-9_.-]{1,128}``, what the
specification allows and the contracts file already required of its other names) are
served — or may be named in the contracts file.

A real ``cradle-kg mcp proxy`` subprocess driven by the official MCP client, in front of
a hostile upstream (a small MCP server of the official SDK, on stdio); the proxy's stderr
is read as a pipe.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import ContractsError
from cradle_kg.integrations.contracts import load_contracts

ROOT = Path(__file__).resolve().parents[2]
#: (name, annotated read-only by the upstream): served as a read only if the name is one
NAMES = [("\x1b]0;owned\x07\x1b[2Jwipe", False), ("[/x]", False), ("plain_write", False),
         ("[bold]plain[/bold]", True), ("\u202eevil", True), ("x" * 129, True),
         ("ok_read", True)]
UPSTREAM = f'''
import os
import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # what the proxy prints is the point, not this
server = Server("hostile")


@server.list_tools()
async def tools() -> list[types.Tool]:
    read = types.ToolAnnotations(readOnlyHint=True)  # the upstream's word: served as reads
    return [types.Tool(name=n, inputSchema={{"type": "object"}}, annotations=read if r else None)
            for n, r in {NAMES!r}]


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
'''


def test_upstream_tool_names_are_shown_clean_and_only_mcp_names_served(
        home: Path, tmp_path: Path) -> None:
    upstream = tmp_path / "hostile.py"
    upstream.write_text(UPSTREAM)
    contracts = tmp_path / "contracts.yaml"
    contracts.write_text("tools: {}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "cradle_kg", "mcp", "proxy", "--home", str(home), "--agent", AGENT,
        "--contracts", str(contracts), "--allow-undeclared-read", "--",
        sys.executable, str(upstream)], env=env, cwd=ROOT)
    log = tmp_path / "proxy.stderr"
    served: list[str] = []

    async def main() -> None:
        with log.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=timedelta(seconds=60)) as s:
                await s.initialize()
                served.extend(t.name for t in (await s.list_tools()).tools)

    anyio.run(main)
    err = log.read_text(encoding="utf-8", errors="replace")
    assert served == ["upstream.ok_read"], served
    assert "not served" in err, err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err, repr(err)
    for shown in ("[bold]plain[/bold]", "[/x]", "plain_write", "wipe", "evil", "x" * 129):
        assert shown in err, (shown, err)  # shown as text, not interpreted
    assert "MarkupError" not in err and "Traceback" not in err, err


def test_a_contract_naming_a_tool_outside_the_mcp_names_is_refused(tmp_path: Path) -> None:
    contracts = tmp_path / "contracts.yaml"
    contracts.write_text('tools:\n  "[/x]":\n    side_effect: read_only\n')
    with pytest.raises(ContractsError, match=r"(?i)not an MCP tool name"):
        load_contracts(contracts)
