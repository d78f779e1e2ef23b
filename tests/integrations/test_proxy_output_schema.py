"""The proxy checks an upstream's answers against the output schema the upstream declares,
with a validator compiled once at start (issue 12's per-call cost): a schema that is not a
schema refuses the proxy at start; an answer that breaks it fails the call (the tool
raised: gate 2 and a human task follow), as the SDK's own ``call_tool`` check would."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_connected_server_and_client_session

from cradle_kg.errors import InputError, ToolError
from cradle_kg.integrations.proxy import Upstream, output_checkers

SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


def _server() -> Server[Any, Any]:
    server: Server[Any, Any] = Server("upstream")

    async def call(req: types.CallToolRequest) -> types.ServerResult:
        name = req.params.name
        body: dict[str, Any] | None = {"id": "n1"} if name == "good" else (
            {"id": 7} if name == "bad" else None)
        return types.ServerResult(types.CallToolResult(
            content=[types.TextContent(type="text", text=str(body))],
            structuredContent=body, isError=False))

    server.request_handlers[types.CallToolRequest] = call
    return server


def _tools() -> list[types.Tool]:
    return [types.Tool(name=n, inputSchema={"type": "object"}, outputSchema=SCHEMA)
            for n in ("good", "bad", "none")] + [
        types.Tool(name="free", inputSchema={"type": "object"})]


def test_a_bad_output_schema_refuses_the_proxy_at_start() -> None:
    bad = types.Tool(name="t", inputSchema={"type": "object"},
                     outputSchema={"type": "object", "properties": {"x": {"type": 12}}})
    with pytest.raises(InputError, match="invalid output schema"):
        output_checkers([bad])
    assert set(output_checkers(_tools())) == {"good", "bad", "none"}


def test_answers_are_checked_against_the_declared_schema() -> None:
    async def scenario() -> list[Any]:
        out: list[Any] = []
        async with create_connected_server_and_client_session(_server()) as session:
            upstream = Upstream(session, "memory", output_checkers(_tools()))

            def calls() -> None:
                out.append(upstream.call("good", {}, key="k1").structuredContent)
                for name in ("bad", "none"):
                    try:
                        upstream.call(name, {})
                    except ToolError as exc:
                        out.append(str(exc))
                out.append(upstream.call("free", {}).structuredContent)  # nothing declared

            await anyio.to_thread.run_sync(calls)
        return out

    good, bad, none, free = anyio.run(scenario)
    assert good == {"id": "n1"}
    assert "breaks its output schema" in bad and "7 is not of type 'string'" in bad
    assert "no structured content" in none
    assert free is None
