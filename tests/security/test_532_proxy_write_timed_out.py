"""A proxied write whose upstream call timed out is settled by asking, not by guessing.

Finding: **a timed-out write whose effect landed was journaled ``failed``.** The upstream
took longer than ``UPSTREAM_TIMEOUT`` to answer ``put`` (a slow upstream, a slow network):
the call raised ``Timed out``, the gateway called it again with the same key (keyed) and
timed out again, and gate 2's own read of the record then found the note written — the
upstream's answer had only come late. The outcome was ``failed`` all the same
(``output_schema: … raised McpError: Timed out``), the transition aborted and a human task
opened ("the state of the target is unknown"): the journal and the graph said the write
did not take effect while the declared read proved it had, and the same call after a
crash in it (recovery's lookup) is recorded ``executed``. An agent told ``failed`` retries
— under a new key, a second write.

Now: a call that raised (a timeout is one: its outcome is unknown) of a tool with a lookup
(keyed, with a declared read) is asked about before it is settled, as recovery asks: the
lookup finds the key's effect → the found state is verified and committed (``executed``,
its reason saying it was found by the lookup after the call raised); no trace → as before
(``failed``, transition aborted, a human task: the state of the target is unknown, never
called again by itself). A retry of the same key is answered from the record either way.
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
from cradle_kg.integrations import proxy
from cradle_kg.integrations.contracts import load_contracts
from cradle_kg.integrations.proxy import Upstream, output_checkers, register
from cradle_kg.records import OutcomeStatus
from cradle_kg.storage.opening import home_journal_target, verify_target
from cradle_kg.workflow.sandbox import Recording
from tests.conftest import make_config, proposal

SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "id": {"type": "string"}, "text": {"type": "string"}}, "required": ["id", "text"]}
READ_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"id": {"type": "string"}}}
CONTRACT = ("tools:\n  put:\n    side_effect: reversible\n    idempotency: keyed\n"
            "    target: 'test:{id}'\n"
            "    verify: {tool: read, arguments: {id: '{id}'}, expect: {text: '{text}'}}\n")
#: the proxy's deadline in this test (seconds), and how long the upstream's `put` takes
DEADLINE = 0.2


def slow_server(put_takes: float, effects: list[str]) -> Server[Any, Any]:
    """``put`` answers after ``put_takes`` s and writes once per key (its ``_meta`` key);
    ``read`` answers the note, or an error when there is none."""
    s: Server[Any, Any] = Server("slow")
    notes: dict[str, str] = {}
    keys: set[str] = set()

    async def call(req: types.CallToolRequest) -> types.ServerResult:
        args = dict(req.params.arguments or {})
        if req.params.name == "put":
            await anyio.sleep(put_takes)
            meta = req.params.meta.model_dump() if req.params.meta else {}
            key = str(meta.get("cradle-kg/idempotency_key"))
            if key not in keys:
                keys.add(key)
                notes[args["id"]] = args["text"]
                effects.append(args["id"])
            body: dict[str, Any] = {"id": args["id"], "text": notes[args["id"]]}
        elif args.get("id") in notes:
            body = {"id": args["id"], "text": notes[args["id"]]}
        else:
            return types.ServerResult(types.CallToolResult(
                content=[types.TextContent(type="text", text="no such note")], isError=True))
        return types.ServerResult(types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(body))],
            structuredContent=body, isError=False))

    s.request_handlers[types.CallToolRequest] = call
    return s


def written(home: Path, put_takes: float) -> tuple[list[Any], list[str], list[str]]:
    """Note ``n1`` written through the proxy, then the same key asked again after the
    upstream had time to finish: (the two outcomes, the effects, the journal's kinds)."""
    tools = [types.Tool(name="put", inputSchema=SCHEMA),
             types.Tool(name="read", inputSchema=READ_SCHEMA)]
    path = home.parent / "contracts.yaml"
    path.write_text(CONTRACT)
    rt = Runtime(home, config=make_config())
    effects: list[str] = []
    outcomes: list[Any] = []

    async def main() -> None:
        async with create_connected_server_and_client_session(
                slow_server(put_takes, effects)) as session:
            upstream = Upstream(session, "memory", output_checkers(tools))
            register(rt, upstream, tools, load_contracts(path), prefix="test.up.",
                     allow_undeclared_read=False)
            for pid in ("p-1", "p-2"):
                p = proposal(pid, "test.up.put", {"id": "n1", "text": "hello"},
                             agent="agent:tester", target="test:n1",
                             action={"idempotency_key": "k-n1"})
                outcomes.append(await anyio.to_thread.run_sync(rt.submit, p))
                await anyio.sleep(put_takes)  # the upstream's late answers come in

    try:
        anyio.run(main)
        events = list(rt.journal.events())
        kinds = [e.kind for e in events]
        recording = Recording.of(events)
        for action_id in recording.observed:
            # strict replay: the call raises as it did; its lookup finds what it found
            seen = recording.observation(action_id)
            assert seen is not None and seen["error"] and "Timed out" in seen["error"], seen
            found = recording.looked_up(action_id)
            if action_id in recording.looked:
                assert found is not None and found["id"] == "n1", found
    finally:
        rt.close()
    assert verify_target(home_journal_target(home)).intact
    return outcomes, effects, kinds


def test_a_timed_out_write_that_landed_is_executed_not_failed(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proxy, "UPSTREAM_TIMEOUT", DEADLINE)
    # each attempt times out; the first one's write lands before gate 2 reads
    (first, again), effects, kinds = written(home, put_takes=2.5 * DEADLINE)
    assert first.status is OutcomeStatus.EXECUTED, (first.status, first.reasons)
    assert first.transition is not None and first.transition.committed_at is not None
    assert any("lookup" in r and "raised" in r for r in first.reasons), first.reasons
    assert "human_task.opened" not in kinds, kinds
    assert again.replayed and again.status is OutcomeStatus.EXECUTED
    assert effects == ["n1"]  # one effect: the key held it


def test_a_timed_out_write_not_found_stays_unknown_and_is_not_called_again(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proxy, "UPSTREAM_TIMEOUT", DEADLINE)
    # the write lands only after gate 2 read (and the lookup asked): nothing to find yet
    (first, again), effects, kinds = written(home, put_takes=8 * DEADLINE)
    assert first.status is OutcomeStatus.FAILED, (first.status, first.reasons)
    assert first.transition is not None and first.transition.committed_at is None
    assert kinds.count("human_task.opened") == 1, kinds
    assert "unknown" in " ".join(first.reasons), first.reasons
    assert again.replayed and again.status is OutcomeStatus.FAILED  # nothing runs again
    assert effects == ["n1"]
