"""Cedar is asked about the default an upstream MCP tool fills in.

Finding (twenty-second round's review, beside ``test_362``): ``context.arguments`` now holds
the values a tool's model fills in — a default the agent left out — but an upstream tool
behind ``cradle-kg mcp proxy`` has no fields: its model checks the arguments against the
upstream's JSON Schema and keeps them as sent (``proxy.input_model``), and the upstream
fills in its own defaults. Its schema says which (``"recursive": {"type": "boolean",
"default": true}``: what an MCP server written with pydantic publishes for
``recursive: bool = True``). The agent left ``recursive`` out, the forbid ``has recursive
&& recursive == true`` did not apply, the call went upstream without it, and the upstream
ran the recursive delete.

Now Cedar's ``context.arguments`` also holds each top-level default of the upstream's
schema the agent did not write (as ``test_362`` does for a model's field): the forbid meets
the call. What is sent upstream is unchanged (the arguments as written).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.integrations.proxy import input_model
from cradle_kg.records import OutcomeStatus
from tests.conftest import proposal
from tests.security.test_102_cedar_sees_tool_values import typed_tools
from tests.security.test_362_cedar_sees_filled_in_values import POLICY

pytestmark = pytest.mark.usefixtures("journal_backend")

#: an upstream delete tool's input schema, as FastMCP publishes `recursive: bool = True`
SCHEMA = {"type": "object", "required": ["path"], "properties": {
    "path": {"type": "string", "title": "Path"},
    "recursive": {"type": "boolean", "title": "Recursive", "default": True},
    "note": {"type": "string", "default": ""}}}


@pytest.fixture
def ran(home: Path) -> Iterator[tuple[Runtime, list[dict[str, Any]]]]:
    with typed_tools(home, "frozen.cedar", POLICY,
                     (("test.delete", input_model("delete", SCHEMA)),)) as served:
        yield served


def _submit(rt: Runtime, pid: str, arguments: dict[str, Any]) -> Any:
    return rt.submit(proposal(pid, "test.delete", arguments, agent="agent:tester",
                              target="test:a"))


def test_an_upstream_default_the_agent_left_out_meets_the_forbid(
        ran: tuple[Runtime, list[dict[str, Any]]]) -> None:
    rt, calls = ran
    out = _submit(rt, "p-del", {"path": "/srv/data"})
    # before: executed, sent upstream without `recursive` (the upstream's default: true)
    assert out.status is OutcomeStatus.DENIED, (out.status, out.reasons)
    assert out.decision is not None
    assert "no-recursive-delete" in {r.policy_id for r in out.decision.policy_results}
    assert calls == []


def test_what_the_agent_wrote_is_read_and_sent_as_written(
        ran: tuple[Runtime, list[dict[str, Any]]]) -> None:
    rt, calls = ran
    out = _submit(rt, "p-del-yes", {"path": "/srv/data", "recursive": True})
    assert out.status is OutcomeStatus.DENIED, out.reasons
    out = _submit(rt, "p-del-no", {"path": "/srv/data", "recursive": False})
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    # sent upstream as written: no default added (`note` left out stays out)
    assert calls == [{"tool": "test.delete", "path": "/srv/data", "recursive": False}]
