"""A proxied write's verifying read must be about the write's own record.

Finding: **gate 2 of a proxied write compared only the fields its contract's ``expect``
names.** The declared upstream read (``verify: {tool: read, arguments: {id: "{id}"},
expect: {text: "{text}"}}``) was asked about note ``n1``; an upstream that answered about
another note (``{"id": "n9", "text": <the same text>}`` — a buggy read, a hostile one, a
read template that maps two writes onto one record) verified the write: ``executed``,
"the intended effect happened", though nothing says it happened to ``n1`` — and the same
read is the tool's crash-recovery lookup, which then reported the effect done. A target
whose arguments the read was never asked about (``target: "acct:{bank}/{num}"``, the read
asked ``{num}`` only) verified a write to one bank by the other's record.

Now: the read must prove which record it answers about. The contract's ``verify.identity``
names the fields of the read's answer that identify the record, as templates over the
call's arguments (by default the read's own ``arguments``, each echoed back under its
name: ``{id: "{id}"}``); an answer whose identity is missing or another's proves nothing
— ``resource_exists`` and ``expected_state`` fail, the call is ``verification_failed``
(a human task) and the lookup
finds nothing. A contract whose identity does not name every argument of its target
cannot be checked and is refused on load, naming the missing one.
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
from cradle_kg.errors import ContractsError
from cradle_kg.integrations.contracts import load_contracts
from cradle_kg.integrations.proxy import Upstream, output_checkers, register
from cradle_kg.records import OutcomeStatus
from cradle_kg.storage.opening import home_journal_target, verify_target
from tests.conftest import make_config, proposal

SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "id": {"type": "string"}, "text": {"type": "string"}}, "required": ["id", "text"]}
READ_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"id": {"type": "string"}}}
CONTRACT = ("tools:\n  put:\n    side_effect: reversible\n    idempotency: keyed\n"
            "    target: 'test:{id}'\n"
            "    verify: {tool: read, arguments: {id: '{id}'}, expect: {text: '{text}'}%s}\n")


def notes_server(read_answers: Any, called: list[str]) -> Server[Any, Any]:
    """``put`` stores a note; ``read`` answers ``read_answers(asked id, notes)``."""
    s: Server[Any, Any] = Server("other-record")
    notes: dict[str, str] = {}

    async def call(req: types.CallToolRequest) -> types.ServerResult:
        args = dict(req.params.arguments or {})
        called.append(req.params.name)
        if req.params.name == "put":
            notes[args["id"]] = args["text"]
            body: dict[str, Any] = {"id": args["id"], "text": args["text"]}
        else:
            body = read_answers(str(args.get("id")), notes)
        return types.ServerResult(types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(body))],
            structuredContent=body, isError=False))

    s.request_handlers[types.CallToolRequest] = call
    return s


def written_and_looked_up(home: Path, read_answers: Any, identity: str = "",
                          text: str = "hello") -> tuple[Any, Any, list[str]]:
    """Note ``n1`` written with ``text`` through the proxy in front of
    :func:`notes_server`, then its crash-recovery lookup: (the outcome, what the lookup
    found, the upstream tools called)."""
    tools = [types.Tool(name="put", inputSchema=SCHEMA),
             types.Tool(name="read", inputSchema=READ_SCHEMA)]
    path = home.parent / "contracts.yaml"
    path.write_text(CONTRACT % identity)
    rt = Runtime(home, config=make_config())
    called: list[str] = []
    found: list[Any] = []

    async def main() -> None:
        async with create_connected_server_and_client_session(
                notes_server(read_answers, called)) as session:
            upstream = Upstream(session, "memory", output_checkers(tools))
            register(rt, upstream, tools, load_contracts(path), prefix="test.up.",
                     allow_undeclared_read=False)
            p = proposal("p-n1", "test.up.put", {"id": "n1", "text": text},
                         agent="agent:tester", target="test:n1",
                         action={"idempotency_key": "k-n1"})
            found.append(await anyio.to_thread.run_sync(rt.submit, p))
            spec = rt.tools.get("test.up.put")
            lookup = rt.tools.lookup_for("test.up.put")
            assert lookup is not None
            from cradle_kg.tools import ToolCall
            call = ToolCall(tool_id="test.up.put", target="test:n1",
                            arguments=spec.parse_arguments({"id": "n1", "text": text}),
                            idempotency_key="k-n1", environment="test")
            found.append(await anyio.to_thread.run_sync(lookup, call))

    try:
        anyio.run(main)
    finally:
        rt.close()
    assert verify_target(home_journal_target(home)).intact
    return found[0], found[1], called


def another_note(asked: str, notes: dict[str, str]) -> dict[str, Any]:
    """The read answers about note ``n9``, whatever it is asked — with the text written."""
    return {"id": "n9", "text": next(iter(notes.values()), "")}


def no_identity(asked: str, notes: dict[str, str]) -> dict[str, Any]:
    """The read answers the text alone: nothing says which note it is."""
    return {"text": notes.get(asked, "")}


@pytest.mark.parametrize("read_answers", [another_note, no_identity],
                         ids=["another-record", "no-identity"])
def test_a_read_about_another_record_verifies_nothing(home: Path, read_answers: Any) -> None:
    outcome, looked_up, called = written_and_looked_up(home, read_answers)
    assert called[:2] == ["put", "read"]  # the write happened; gate 2 read
    assert outcome.status is OutcomeStatus.VERIFICATION_FAILED, (outcome.status, outcome.reasons)
    assert any("another record" in r or "identif" in r for r in outcome.reasons), \
        outcome.reasons
    assert looked_up is None  # crash recovery: the effect is not found either


def test_the_read_of_the_right_record_still_verifies(home: Path) -> None:
    def right(asked: str, notes: dict[str, str]) -> dict[str, Any]:
        return {"id": asked, "text": notes.get(asked, "")}

    outcome, looked_up, _ = written_and_looked_up(home, right)
    assert outcome.status is OutcomeStatus.EXECUTED, outcome.reasons
    assert looked_up is not None and looked_up["id"] == "n1"


def renamed_other(asked: str, notes: dict[str, str]) -> dict[str, Any]:
    return {"note_id": "n9", "text": next(iter(notes.values()), "")}


def renamed_right(asked: str, notes: dict[str, str]) -> dict[str, Any]:
    return {"note_id": asked, "text": notes.get(asked, "")}


@pytest.mark.parametrize(("read_answers", "status"), [
    (renamed_other, OutcomeStatus.VERIFICATION_FAILED), (renamed_right, OutcomeStatus.EXECUTED)],
    ids=["another-record", "its-record"])
def test_an_explicit_identity_names_the_answers_field(
        home: Path, read_answers: Any, status: OutcomeStatus) -> None:
    outcome, _, _ = written_and_looked_up(home, read_answers, ", identity: {note_id: '{id}'}")
    assert outcome.status is status, outcome.reasons


@pytest.mark.parametrize(("verify", "missing"), [
    ("{tool: read, arguments: {num: '{num}'}}", "bank"),
    ("{tool: read, arguments: {}}", "bank"),
    ("{tool: read, arguments: {bank: '{bank}', num: '{num}'}, identity: {num: '{num}'}}",
     "bank"),
], ids=["read-asks-part", "read-asks-nothing", "identity-names-part"])
def test_a_contract_whose_read_cannot_name_the_target_is_refused(
        tmp_path: Path, verify: str, missing: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("tools:\n  move:\n    side_effect: reversible\n"
                    "    target: 'acct:{bank}/{num}'\n"
                    f"    verify: {verify}\n")
    with pytest.raises(ContractsError) as caught:
        load_contracts(path)
    assert f"{{{missing}}}" in caught.value.message and "identity" in caught.value.message
