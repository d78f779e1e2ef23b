"""Hostile stdio upstreams for the proxy's own JSON-RPC client (``StdioClient``): a script
that answers ``initialize``, then stops reading at the first other request and does what a
test gives it (``then``), and a call timed against its deadline."""

from __future__ import annotations

import time

from mcp.shared.exceptions import McpError

from cradle_kg.integrations.upstream_stdio import StdioClient

_ANSWER_INITIALIZE = r'''
import json
import sys
import time

out = sys.stdout.buffer
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    if msg.get("method") == "initialize":
        out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {},
            "serverInfo": {"name": "hostile", "version": "1"}}}).encode() + b"\n")
        out.flush()
    elif "id" in msg:
        break
'''


def upstream_script(then: str) -> str:
    """The upstream's source: ``initialize`` answered, then (once a call came) ``then``."""
    return _ANSWER_INITIALIZE + then


def timed_call(client: StdioClient, name: str, deadline: float, out: list[object], *,
               delay: float = 0.0) -> None:
    """Call ``name`` with ``deadline`` after ``delay``: ``out`` gets the error, if any, then
    the seconds the call took."""
    time.sleep(delay)
    began = time.monotonic()
    try:
        client.tool_call(name, {}, None, deadline)
    except McpError as exc:
        out.append(exc)
    out.append(time.monotonic() - began)
