"""An upstream's text answer is read by the strict loader; an output no journal can hold
fails the call — never an exception after the effect.

Finding (the fourth attack review): an upstream behind ``mcp proxy`` that answers without
``structuredContent`` is read from its text content (``proxy.answer``) with ``json.loads``
— the strict reader of the upstream's lines saw that text only as a JSON *string*, so
none of its rules applied inside it:

* ``{"ok": true, "v": "\\ud800"}`` — a lone surrogate escaped in the text — decoded into
  the output, and the gateway's ``canonical_json(...).encode("utf-8")`` raised
  ``UnicodeEncodeError`` out of ``submit`` *after* the upstream's effect: ``action.intent``
  journaled, no observation, no gate 2, no outcome — the class ``test_28`` closed for
  malformed side effects; an MCP client got an error for a write that happened;
* ``{"ok": false, "ok": true}`` executed as ok (the last key won);
* ``{"ok": true, "v": NaN}`` executed, ``NaN`` journaled as ``null``; 4,000-digit integers
  were journaled as given.

Now a text answer that is JSON goes through the strict loader (``inputs.load_json``, at
the widths a record holds): a key given twice, ``NaN``, a lone surrogate, a number past
1,000 digits or nesting past 100 is a ``ToolError`` — the call fails, gate 2 reads the
state, the observation and the outcome are journaled; text that is no JSON at all is
``{"text": ...}`` as before; structured content (which the SDK parsed: a key given twice
is lost before the proxy sees it) is held to the same rules. And the gateway journals an
observation of any tool whose output cannot be encoded (a Python tool's lone surrogate):
the call fails, nothing raises.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_connected_server_and_client_session

from cradle_kg import Runtime
from cradle_kg.integrations.contracts import load_contracts
from cradle_kg.integrations.proxy import Upstream, output_checkers, register
from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass
from cradle_kg.storage.opening import home_journal_target, verify_target
from cradle_kg.tools import ToolCall, ToolSpec
from tests.conftest import Echo, EchoOut, make_config, proposal, register_test_tools

from .test_28_hostile_upstream import OK_SCHEMA, answering_server, submit_each

CONTRACTS = ("tools:\n  put:\n    side_effect: reversible\n    idempotency: none\n"
             "    target: 'test:a'\n    verify: {tool: read, arguments: {}}\n")


def texting_server(text: Any, called: list[str]) -> Server[Any, Any]:
    """An in-memory upstream whose ``put`` answers ``text`` as its only content (no
    structured content), and whose ``read`` answers ``{"ok": true}``."""
    s: Server[Any, Any] = Server("texting")

    async def call(req: types.CallToolRequest) -> types.ServerResult:
        called.append(req.params.name)
        body = text if req.params.name == "put" else '{"ok": true}'
        return types.ServerResult(types.CallToolResult(
            content=[types.TextContent(type="text", text=body)], isError=False))

    s.request_handlers[types.CallToolRequest] = call
    return s


def _through_proxy(home: Path, text: str | None, structured: Any = None
                   ) -> tuple[Runtime, Any, list[str]]:
    called: list[str] = []
    tools = [types.Tool(name="put", inputSchema=OK_SCHEMA),
             types.Tool(name="read", inputSchema={"type": "object"})]
    contracts = home.parent / "contracts.yaml"
    contracts.write_text(CONTRACTS)
    rt = Runtime(home, config=make_config())
    results: list[Any] = []

    async def main() -> None:
        server = texting_server(text, called) if text is not None else answering_server(
            {"put": structured}, called)
        async with create_connected_server_and_client_session(server) as session:
            register(rt, Upstream(session, "memory", output_checkers(tools)), tools,
                     load_contracts(contracts), prefix="test.up.", allow_undeclared_read=False)
            results.extend(await anyio.to_thread.run_sync(submit_each, rt, [proposal(
                "p-1", "test.up.put", {"value": "x"}, agent="agent:tester",
                target="test:a")]))

    anyio.run(main)
    return rt, results[0], called


@pytest.mark.parametrize("text", [
    '{"ok": true, "v": "\\ud800"}', '{"ok": false, "ok": true}', '{"ok": true, "v": NaN}',
    '{"ok": true, "n": ' + "9" * 4000 + "}",
], ids=["lone-surrogate", "key-twice", "nan", "4000-digits"])
def test_a_hostile_text_answer_fails_the_call_and_loses_nothing(home: Path,
                                                                text: str) -> None:
    rt, out, called = _through_proxy(home, text)
    try:
        # before: UnicodeEncodeError raised out of submit (intent only), or `executed`
        assert not isinstance(out, BaseException), f"raised {type(out).__name__}: {out}"
        assert called == ["put", "read"]  # the effect happened once; gate 2 read it back
        assert out.status is OutcomeStatus.FAILED, (out.status, out.reasons)
        assert any("the upstream answered JSON the runtime refuses" in r
                   for r in out.reasons), out.reasons
        kinds = [e.kind for e in rt.journal.events(run_id=out.run_id)]
        for kind in ("action.intent", "action.observed", "run.outcome"):
            assert kind in kinds, kinds
    finally:
        rt.close()
    assert verify_target(home_journal_target(home)).intact


@pytest.mark.parametrize("structured", [
    {"ok": True, "n": 10**1200}, {"ok": True, "v": "\ud800"},
], ids=["1200-digits", "lone-surrogate"])
def test_structured_content_is_held_to_the_same_rules(home: Path, structured: Any) -> None:
    rt, out, called = _through_proxy(home, None, structured)
    try:
        # before: `executed` (1,201 digits journaled), or UnicodeEncodeError out of submit
        assert not isinstance(out, BaseException), f"raised {type(out).__name__}: {out}"
        assert called == ["put", "read"]
        assert out.status is OutcomeStatus.FAILED, (out.status, out.reasons)
        assert any("the upstream answered JSON the runtime refuses" in r
                   for r in out.reasons), out.reasons
    finally:
        rt.close()
    assert verify_target(home_journal_target(home)).intact


@pytest.mark.parametrize(("text", "output"), [
    ("the note was written", {"text": "the note was written"}),
    ('{"ok": true, "id": "n-1", "n": 1234567890123456789012}',
     {"ok": True, "id": "n-1", "n": 1234567890123456789012}),
    ("{not json", {"text": "{not json"}),
], ids=["plain-text", "json", "braced-text"])
def test_an_ordinary_text_answer_still_executes(home: Path, text: str,
                                                output: dict[str, Any]) -> None:
    rt, out, called = _through_proxy(home, text)
    try:
        assert not isinstance(out, BaseException), out
        assert called == ["put", "read"]
        assert out.status is OutcomeStatus.EXECUTED, out.reasons
        assert out.observation is not None and dict(out.observation.output) == output
    finally:
        rt.close()


def test_a_tool_output_no_journal_can_hold_fails_the_call(home: Path) -> None:
    rt = Runtime(home, config=make_config())
    register_test_tools(rt)

    def surrogate(call: ToolCall) -> EchoOut:
        return EchoOut(value="read from a file: \udcff")  # surrogateescape, say

    rt.register_tool(ToolSpec(
        id="test.surrogate", version="1", input_model=Echo, output_model=EchoOut,
        side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
        blast_radius=("test:*",), target_from="test:*", verifier="test.ok"), surrogate)
    try:
        (out,) = submit_each(rt, [proposal("p-s", "test.surrogate", {"value": "x"},
                                           agent="agent:tester", target="test:a")])
        # before: UnicodeEncodeError out of submit, the intent journaled, no outcome
        assert not isinstance(out, BaseException), f"raised {type(out).__name__}: {out}"
        assert out.status is OutcomeStatus.FAILED
        assert any("cannot be journaled" in r for r in out.reasons), out.reasons
    finally:
        rt.close()
    assert verify_target(home_journal_target(home)).intact
