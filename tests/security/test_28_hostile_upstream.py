"""An upstream MCP server behind ``cradle-kg mcp proxy`` that answers what it likes.

The upstream is the real proxy code (:func:`cradle_kg.integrations.proxy.register`, its
``Upstream`` client session) talking to an in-memory MCP server of the official SDK; the
runtime is real. What the upstream answers is data, never the runtime's instructions.

Finding: **a side effect the runtime cannot read crashed the call after the effect.** The
gateway turned each ``side_effects`` entry of a tool's output into an
``ObservedSideEffect`` outside any error handling. An upstream answering
``{"side_effects": [{"kind": 5}]}`` (or ``"side_effects": 7``) made ``submit`` raise a
``ValidationError`` (``TypeError``) out of the gateway — an exception, not an outcome,
for whichever entry point called it — the upstream's effect done, ``action.intent``
journaled and no observation, no gate 2, no outcome: the run left for crash recovery.
Entries that were not objects were skipped, so a side effect written as a string never
reached the blast-radius check. The side effects are now read with the output: one
that is not a side effect makes the observation's output break its contract — gate 2
reads the state, the call ``failed``, a human task, one journal that verifies.
"""

from __future__ import annotations

import json
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
from cradle_kg.records import OutcomeStatus
from cradle_kg.storage.opening import home_journal_target, verify_target
from tests.conftest import make_config, proposal

OK_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"value": {"type": "string"}}}


def submit_each(rt: Runtime, proposals: list[dict[str, Any]]) -> list[Any]:
    """Each proposal submitted in turn: its outcome, or the exception it raised (what an
    attack produced before its fix), so a test can say which."""
    results: list[Any] = []
    for p in proposals:
        try:
            results.append(rt.submit(p))
        except Exception as exc:
            results.append(exc)
    return results


def answering_server(answers: dict[str, Any], called: list[str]) -> Server[Any, Any]:
    """An in-memory upstream whose tool ``name`` answers ``answers[name]`` (else ``{"ok":
    true}``), noting each call's name in ``called``."""
    s: Server[Any, Any] = Server("hostile")

    async def call(req: types.CallToolRequest) -> types.ServerResult:
        called.append(req.params.name)
        body = answers.get(req.params.name, {"ok": True})
        return types.ServerResult(types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(body))],
            structuredContent=body, isError=False))

    s.request_handlers[types.CallToolRequest] = call
    return s


def _proxy(home: Path, answers: dict[str, Any], schemas: dict[str, dict[str, Any]],
           proposals: list[dict[str, Any]]) -> tuple[Runtime, list[Any], list[str]]:
    """Serve ``schemas`` (each tool answering ``answers[name]``) through the proxy's
    registration and submit ``proposals``; (runtime, outcomes or exceptions, calls seen)."""
    called: list[str] = []

    tools = [types.Tool(name=n, inputSchema=s) for n, s in schemas.items()]
    tools.append(types.Tool(name="read", inputSchema={"type": "object"}))
    contracts = home.parent / "contracts.yaml"
    contracts.write_text("tools:\n" + "".join(
        f"  {n}:\n    side_effect: reversible\n    idempotency: none\n"
        f"    target: 'test:a'\n    verify: {{tool: read, arguments: {{}}}}\n"
        for n in schemas))
    rt = Runtime(home, config=make_config())
    results: list[Any] = []

    async def main() -> None:
        async with create_connected_server_and_client_session(
            answering_server(answers, called)) as session:
            upstream = Upstream(session, "memory", output_checkers(tools))
            register(rt, upstream, tools, load_contracts(contracts), prefix="test.up.",
                     allow_undeclared_read=False)

            results.extend(await anyio.to_thread.run_sync(submit_each, rt, proposals))

    anyio.run(main)
    return rt, results, called


def _call(pid: str, tool: str) -> dict[str, Any]:
    return proposal(pid, "test.up." + tool, {"value": "x"}, agent="agent:tester",
                    target="test:a")


@pytest.mark.parametrize("side_effects", [
    [{"kind": 5}], [{"kind": "write"}], ["prod-db:users"], 7, {"kind": "write"},
    [{"kind": "write", "resource": "test:a", "extra": "no such field"}],
], ids=["kind-not-text", "no-resource", "a-string", "a-number", "an-object", "extra-field"])
def test_an_unreadable_side_effect_fails_the_call_and_loses_nothing(
        home: Path, side_effects: Any) -> None:
    rt, results, called = _proxy(home, {"put": {"ok": True, "side_effects": side_effects}},
                                 {"put": OK_SCHEMA}, [_call("p-se", "put")])
    try:
        (out,) = results
        assert not isinstance(out, BaseException), f"raised {type(out).__name__}: {out}"
        assert called == ["put", "read"]  # the effect happened; gate 2 read it back
        assert out.status is OutcomeStatus.FAILED
        assert any("`side_effects`" in r for r in out.reasons), out.reasons
        kinds = [e.kind for e in rt.journal.events(run_id=out.run_id)]
        for kind in ("action.intent", "action.observed", "verification.recorded",
                     "run.outcome"):
            assert kind in kinds, kinds
        observed = next(e for e in rt.journal.events(run_id=out.run_id)
                        if e.kind == "action.observed")
        assert observed.payload["observation"]["reported_ok"] is False
    finally:
        rt.close()
    assert verify_target(home_journal_target(home)).intact

