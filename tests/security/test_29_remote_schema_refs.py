"""A JSON Schema someone else wrote makes the runtime open no URL and read no file.

Finding: every JSON Schema validator the runtime built — for an upstream MCP tool's
``inputSchema`` and ``outputSchema`` (``cradle-kg mcp proxy``) and for a workflow file's
step schemas — was ``jsonschema``'s default, which still *retrieves* a ``$ref`` it does
not hold, with ``urlopen`` and no timeout. A hostile upstream listing a tool whose schema
says ``{"$ref": "http://169.254.169.254/…"}`` (or ``file:///…``) had the proxy open that
URL from the runtime's network position each time an agent called the tool — a
connection to a loopback listener here, whose answer then decided the check (and, with
no timeout, a URL that never answers would hold gate 1). A workflow file's step schema
did the same on each step (``file://`` too: a local file became the schema). The
validators are now built by :func:`cradle_kg.json_schema.validator`, whose registry
resolves references inside the schema only: a remote one is unresolvable, the call is
denied at gate 1 (its arguments do not match the schema), the upstream's answer fails
the call, a workflow value is refused — each a typed error, not an exception out of the
validator — and nothing is opened.

What holds (checked here): an ``inputSchema`` whose ``type`` is not a type denies the
call at gate 1 before the upstream is called; a reference inside the schema
(``#/$defs/…``) still validates.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_connected_server_and_client_session
from pydantic import ValidationError

from cradle_kg.errors import ToolError
from cradle_kg.integrations.proxy import Upstream, output_checkers
from cradle_kg.records import OutcomeStatus
from cradle_kg.workflow.definitions import parse_definition
from tests.security.test_28_hostile_upstream import _call, _proxy


@pytest.fixture
def listener() -> Iterator[tuple[int, list[int]]]:
    """A loopback listener that counts the connections it is offered (and answers a
    schema, so a fetch that reached it would also have *validated*)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.2)
    seen: list[int] = []
    stop = threading.Event()
    body = b'{"type": "string"}'
    answer = (b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
              + str(len(body)).encode() + b"\r\n\r\n" + body)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            seen.append(1)
            conn.settimeout(2)
            try:
                conn.recv(65536)
                conn.sendall(answer)
            except OSError:
                pass
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield sock.getsockname()[1], seen
    stop.set()
    thread.join()
    sock.close()


def test_an_upstream_input_schema_ref_opens_nothing(
        home: Path, listener: tuple[int, list[int]]) -> None:
    port, seen = listener
    schemas = {"ref": {"type": "object", "properties": {
                   "value": {"$ref": f"http://127.0.0.1:{port}/schema.json"}}},
               "local": {"type": "object", "$defs": {"s": {"type": "string"}},
                         "properties": {"value": {"$ref": "#/$defs/s"}}}}
    # (a schema the metaschema refuses, `"type": 12`, refuses the proxy at start: test_69)
    rt, results, called = _proxy(home, {}, schemas, [
        _call("p-ref", "ref"), _call("p-ref2", "ref"), _call("p-local", "local")])
    rt.close()
    ref, ref2, local = results
    for out in (ref, ref2):
        assert not isinstance(out, BaseException), out
        assert out.status is OutcomeStatus.DENIED
    for out in (ref, ref2):
        assert "references outside a schema are not followed" in " ".join(out.reasons)
    assert seen == []
    assert not isinstance(local, BaseException), local
    assert local.status is not OutcomeStatus.DENIED, local.reasons
    assert called[0] == "local"  # the denied calls never reached the upstream


def test_an_upstream_output_schema_ref_opens_nothing(listener: tuple[int, list[int]]) -> None:
    port, seen = listener
    tool = types.Tool(name="t", inputSchema={"type": "object"}, outputSchema={
        "type": "object", "properties": {"id": {"$ref": f"http://127.0.0.1:{port}/s.json"}}})

    def server() -> Server[Any, Any]:
        s: Server[Any, Any] = Server("hostile")

        async def call(req: types.CallToolRequest) -> types.ServerResult:
            return types.ServerResult(types.CallToolResult(
                content=[], structuredContent={"id": "n1"}, isError=False))

        s.request_handlers[types.CallToolRequest] = call
        return s

    got: list[BaseException] = []

    async def main() -> None:
        async with create_connected_server_and_client_session(server()) as session:
            upstream = Upstream(session, "memory", output_checkers([tool]))

            def go() -> None:
                try:
                    upstream.call("t", {})
                except Exception as exc:  # the gateway turns it into the observation's error
                    got.append(exc)

            await anyio.to_thread.run_sync(go)

    anyio.run(main)
    assert seen == []
    assert len(got) == 1 and isinstance(got[0], ToolError), got
    assert "references outside a schema are not followed" in str(got[0])


@pytest.mark.parametrize("where", ["http", "file"])
def test_a_workflow_step_schema_ref_opens_nothing(
        tmp_path: Path, listener: tuple[int, list[int]], where: str) -> None:
    port, seen = listener
    local = tmp_path / "s.json"
    local.write_text('{"type": "string"}')  # a fetch would make "text" valid
    ref = f"http://127.0.0.1:{port}/s" if where == "http" else local.as_uri()
    wf = parse_definition(
        "workflow: w\nversion: '1'\nagent: agent:x\n"
        f"input: {{type: object, properties: {{a: {{$ref: '{ref}'}}}}}}\n"
        "steps:\n  - {id: s1, kind: human, question: q, answers: [x]}\n",
        name="f.yaml", definition="file:f.yaml")
    with pytest.raises(ValidationError, match="references outside a schema are not followed"):
        wf.input_model.model_validate({"a": "text"})
    assert seen == []
