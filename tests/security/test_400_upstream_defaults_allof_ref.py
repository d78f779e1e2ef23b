"""Cedar is asked about an upstream's default declared through ``allOf`` or ``$ref``.

Finding (left open by the review of the twenty-second round's own changes, beside
``test_382``): Cedar's ``context.arguments`` held the defaults of an upstream MCP tool's
schema read from its top-level ``properties`` only. The same default declared through
``allOf`` (at the top or at the argument's schema) or through a ``$ref`` into ``$defs``
(the arguments' whole schema, or the argument's) was not read: the agent left
``recursive`` out, the forbid ``has recursive && recursive == true`` did not apply, and the
upstream ran the recursive delete.

Now the defaults are read through ``allOf`` and local ``$ref`` (``schema_defaults``). A
default the proxy cannot read for sure — under ``anyOf``/``oneOf``/``if``…, two that
differ, a ``$ref`` it does not follow — makes a call that leaves the argument out refused
(``invalid_arguments``); one no argument's name is given to refuses the tool at start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg.errors import InputError
from cradle_kg.integrations.proxy import input_model
from cradle_kg.records import OutcomeStatus
from tests.conftest import proposal
from tests.security.test_102_cedar_sees_tool_values import typed_tools
from tests.security.test_362_cedar_sees_filled_in_values import POLICY

pytestmark = pytest.mark.usefixtures("journal_backend")

_PATH = {"path": {"type": "string"}}
_RECURSIVE = {"type": "boolean", "default": True}

#: `recursive: {default: true}` declared each way the schema language allows
PLACED = {
    "top-level allOf": {"type": "object", "required": ["path"], "properties": _PATH,
                        "allOf": [{"properties": {"recursive": _RECURSIVE}}]},
    "top-level $ref": {"$ref": "#/$defs/Args", "$defs": {"Args": {
        "type": "object", "required": ["path"],
        "properties": {**_PATH, "recursive": _RECURSIVE}}}},
    "argument's $ref": {"type": "object", "required": ["path"], "properties": {
        **_PATH, "recursive": {"$ref": "#/$defs/Flag"}}, "$defs": {"Flag": _RECURSIVE}},
    "argument's allOf": {"type": "object", "required": ["path"], "properties": {
        **_PATH, "recursive": {"allOf": [{"$ref": "#/$defs/Flag"}]}},
        "$defs": {"Flag": _RECURSIVE}},
    "escaped pointer": {"type": "object", "required": ["path"], "properties": {
        **_PATH, "recursive": {"$ref": "#/$defs/a~1b%20c"}}, "$defs": {"a/b c": _RECURSIVE}},
}

#: a default the proxy cannot read for sure: a call must write the argument
UNSURE = {
    "anyOf": {"type": "object", "required": ["path"], "properties": _PATH, "anyOf": [
        {"properties": {"recursive": _RECURSIVE}}, {"required": ["path"]}]},
    "then": {"type": "object", "required": ["path"], "properties": _PATH,
             "if": {"required": ["path"]}, "then": {"properties": {"recursive": _RECURSIVE}}},
    "two defaults": {"type": "object", "required": ["path"], "properties": {
        **_PATH, "recursive": {"type": "boolean", "default": False,
                               "allOf": [{"default": True}]}}},
    "embedded $id": {"type": "object", "required": ["path"], "properties": {
        **_PATH, "recursive": {"$ref": "#/$defs/Flag"}},
        "$defs": {"Flag": _RECURSIVE, "Other": {"$id": "https://x.example/o"}}},
}

#: a default no argument's name is given to, or arguments the proxy cannot follow
REFUSED = {
    "patternProperties": {"type": "object", "properties": _PATH,
                          "patternProperties": {"^rec": _RECURSIVE}},
    "additionalProperties": {"type": "object", "properties": _PATH,
                             "additionalProperties": {"allOf": [_RECURSIVE]}},
    "unfollowed $ref": {"$ref": "#/$defs/Args", "$defs": {
        "Args": {"type": "object", "properties": {"recursive": _RECURSIVE}},
        "Other": {"$id": "https://x.example/o"}}},
}


def _run(home: Path, schema: dict[str, Any], arguments: dict[str, Any]) -> tuple[Any, list]:
    with typed_tools(home, "frozen.cedar", POLICY,
                     (("test.delete", input_model("delete", schema)),)) as (rt, calls):
        out = rt.submit(proposal("p-del", "test.delete", arguments, agent="agent:tester",
                                 target="test:a"))
        return out, calls


@pytest.mark.parametrize("kind", sorted(PLACED))
def test_a_default_through_allof_or_ref_meets_the_forbid(home: Path, kind: str) -> None:
    out, calls = _run(home, PLACED[kind], {"path": "/srv/data"})
    # before: executed, sent upstream without `recursive` (the upstream's default: true)
    assert out.status is OutcomeStatus.DENIED, (kind, out.status, out.reasons)
    assert out.decision is not None
    assert "no-recursive-delete" in {r.policy_id for r in out.decision.policy_results}
    assert calls == []


@pytest.mark.parametrize("kind", sorted(PLACED))
def test_written_it_is_read_and_sent_as_written(home: Path, kind: str) -> None:
    out, calls = _run(home, PLACED[kind], {"path": "/srv/data", "recursive": False})
    assert out.status is OutcomeStatus.EXECUTED, (kind, out.reasons)
    assert calls == [{"tool": "test.delete", "path": "/srv/data", "recursive": False}]


@pytest.mark.parametrize("kind", sorted(UNSURE))
def test_an_unsure_default_must_be_written(home: Path, kind: str) -> None:
    out, calls = _run(home, UNSURE[kind], {"path": "/srv/data"})
    # before: executed, the upstream's default unknown to Cedar
    assert out.status is OutcomeStatus.DENIED, (kind, out.status, out.reasons)
    assert out.decision is not None
    assert "invalid_arguments" in out.decision.reason_codes, out.decision.reason_codes
    assert any("recursive: write it" in r for r in out.reasons), out.reasons
    assert calls == []


@pytest.mark.parametrize("kind", sorted(UNSURE))
def test_an_unsure_default_written_false_runs(home: Path, kind: str) -> None:
    out, calls = _run(home, UNSURE[kind], {"path": "/srv/data", "recursive": False})
    assert out.status is OutcomeStatus.EXECUTED, (kind, out.reasons)
    assert calls == [{"tool": "test.delete", "path": "/srv/data", "recursive": False}]


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_default_no_argument_is_named_by_refuses_the_tool(kind: str) -> None:
    # before: served, the default unknown to Cedar
    with pytest.raises(InputError) as raised:
        input_model("delete", REFUSED[kind])
    assert "declares an input schema the proxy refuses" in raised.value.message
