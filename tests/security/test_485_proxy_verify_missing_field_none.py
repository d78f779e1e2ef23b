"""A proxied write's verifying read: a field the answer lacks matches no value.

Finding: **the identity and ``expect`` checks of a proxied write's verifying read
(``verify.identity``, ``tests/security/test_475``) compared each field as text,
``str(answer.get(field))``**: a field the answer does not hold (or holds as ``null``) read
as the text ``"None"``, so a write whose argument was the string ``"None"`` (a note id, a
text) was "verified" by an answer that names no record at all, or that lacks the written
field — ``executed`` and, as the tool's lookup, reported done to crash recovery. The same
text comparison took ``true`` for the string ``"True"`` and an object for its Python
``repr``.

Now: a field matches its template's value only when the answer holds it as a string equal
to it, or as a number (not a boolean) whose text is it (an id ``1`` answered for the
argument ``"1"``, as before); a missing field, ``null``, a boolean, an object or a list
match nothing — ``verification_failed``, the lookup finds nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.shared.memory import create_connected_server_and_client_session

from cradle_kg import Runtime
from cradle_kg.integrations.contracts import load_contracts
from cradle_kg.integrations.proxy import Upstream, output_checkers, register
from cradle_kg.records import OutcomeStatus
from cradle_kg.storage.opening import home_journal_target, verify_target
from cradle_kg.tools import ToolCall
from tests.conftest import make_config, proposal
from tests.security.test_475_proxy_verify_other_record import (
    CONTRACT,
    READ_SCHEMA,
    SCHEMA,
    notes_server,
)


def _with_argument(home: Path, read_answers: Any, text: str) -> tuple[Any, Any]:
    """Note ``n1`` written with ``text`` through the proxy (test_475's upstream), then
    its crash-recovery lookup: (the outcome, what the lookup found)."""
    tools = [types.Tool(name="put", inputSchema=SCHEMA),
             types.Tool(name="read", inputSchema=READ_SCHEMA)]
    path = home.parent / "contracts.yaml"
    path.write_text(CONTRACT % "")
    rt = Runtime(home, config=make_config())
    found: list[Any] = []
    args = {"id": "n1", "text": text}

    async def main() -> None:
        async with create_connected_server_and_client_session(
                notes_server(read_answers, [])) as session:
            register(rt, Upstream(session, "memory", output_checkers(tools)), tools,
                     load_contracts(path), prefix="test.up.", allow_undeclared_read=False)
            p = proposal("p-n1", "test.up.put", args, agent="agent:tester",
                         target="test:n1", action={"idempotency_key": "k-n1"})
            found.append(await anyio.to_thread.run_sync(rt.submit, p))
            lookup = rt.tools.lookup_for("test.up.put")
            assert lookup is not None
            call = ToolCall(tool_id="test.up.put", target="test:n1",
                            arguments=rt.tools.get("test.up.put").parse_arguments(args),
                            idempotency_key="k-n1", environment="test")
            found.append(await anyio.to_thread.run_sync(lookup, call))

    try:
        anyio.run(main)
    finally:
        rt.close()
    assert verify_target(home_journal_target(home)).intact
    return found[0], found[1]


def no_text(asked: str, notes: dict[str, str]) -> dict[str, Any]:
    """The read names the note and says nothing of its text."""
    return {"id": asked}


def null_text(asked: str, notes: dict[str, str]) -> dict[str, Any]:
    return {"id": asked, "text": None}


def bool_text(asked: str, notes: dict[str, str]) -> dict[str, Any]:
    return {"id": asked, "text": True}


@pytest.mark.parametrize(("read_answers", "written"), [
    (no_text, "None"), (null_text, "None"), (bool_text, "True")],
    ids=["missing", "null", "boolean"])
def test_a_field_the_answer_lacks_matches_nothing(
        home: Path, read_answers: Any, written: str) -> None:
    outcome, looked_up = _with_argument(home, read_answers, written)
    assert outcome.status is OutcomeStatus.VERIFICATION_FAILED, (outcome.status,
                                                                 outcome.reasons)
    assert looked_up is None


def test_the_written_text_read_back_still_verifies(home: Path) -> None:
    def right(asked: str, notes: dict[str, str]) -> dict[str, Any]:
        return {"id": asked, "text": notes.get(asked)}

    outcome, looked_up = _with_argument(home, right, "None")
    assert outcome.status is OutcomeStatus.EXECUTED, outcome.reasons
    assert looked_up is not None
