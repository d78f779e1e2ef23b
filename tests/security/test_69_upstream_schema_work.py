"""An upstream's JSON Schemas cannot make the proxy's checks run without end.

Finding: ``cradle-kg mcp proxy`` checks every argument against the upstream tool's
``inputSchema`` and every answer against its ``outputSchema`` with ``jsonschema``
(:mod:`cradle_kg.json_schema`), and the upstream writes those schemas. Three of their
keywords cost what the upstream likes:

* ``pattern`` / ``patternProperties`` were matched by Python's backtracking ``re``: a tool
  listing ``{"pattern": "^(a+)+$"}`` and an argument (or an answer) of ``"a" * 40 + "!"``
  took 2^40 steps, holding the GIL — every session of the proxy frozen, measured 0.56 s at
  24 characters and doubling with each one more;
* a ``$ref`` that never descends into the value (``{"$ref": "#"}``, or a ``then`` that
  refers back to the whole schema) raised ``RecursionError`` out of gate 1 (an exception,
  not an outcome), and a chain of ``anyOf`` referring twice to the next definition cost
  2^n evaluations of a value of one node;
* ``uniqueItems`` compared an array of objects pair by pair: 3,000 distinct objects of an
  argument, 4.5 million comparisons.

Now patterns run on the Rust ``regex`` engine pydantic-core ships (linear time; a pattern
it cannot run — look-around, back-references — refuses the tool at start), each value's
check has a budget of keyword evaluations (``20,000 + 50`` per node of the value) and of
their nesting (160, well before Python's recursion limit, which ``rpds`` met inside a
comparison as a Rust panic); ``uniqueItems`` is one pass with a set.
A schema that loops on small values refuses the proxy at start, in one line naming the
tool; one that loops only on some values fails that call closed (gate 1 denies it).
Resource use is measured by counting work: calls of ``re`` and of ``jsonschema``'s
pairwise ``equal``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema._keywords
import jsonschema._utils
import pytest
from mcp import types
from mcp.shared.memory import create_connected_server_and_client_session

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import InputError
from cradle_kg.integrations.contracts import load_contracts
from cradle_kg.integrations.proxy import Upstream, output_checkers, register
from cradle_kg.records import OutcomeStatus
from tests.conftest import make_config, proposal

from .jsonl_process import ROOT, JsonLinesProcess, capped_proxy_home, failed_text, upstream_script
from .test_28_hostile_upstream import answering_server, submit_each

EVIL = "^(a+)+$"
#: 40 `anyOf` levels, each referring twice to the next: 2^40 evaluations of one value
CHAIN: dict[str, Any] = {"$defs": {
    **{f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
       for i in range(40)}, "d40": {"type": "string", "minLength": 3}},
    "type": "object", "properties": {"v": {"$ref": "#/$defs/d0"}}}


class ReCalls:
    """``re`` as ``jsonschema``'s keywords see it: each search recorded, none run."""

    def __init__(self) -> None:
        self.patterns: list[str] = []

    def search(self, pattern: str, text: str) -> None:
        self.patterns.append(pattern)
        raise RuntimeError("a backtracking engine was asked to match an upstream's pattern")


@pytest.fixture
def re_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReCalls]:
    spy = ReCalls()
    monkeypatch.setattr(jsonschema._keywords, "re", spy)
    monkeypatch.setattr(jsonschema._utils, "re", spy)
    yield spy


def _proxy(home: Path, tools: list[types.Tool], answers: dict[str, Any],
           proposals: list[dict[str, Any]]) -> tuple[list[Any], list[str]]:
    """Register ``tools`` of an in-memory upstream (each answering ``answers[name]``)
    through the proxy's own code, submit ``proposals``: (outcomes or exceptions, calls)."""
    called: list[str] = []

    contracts = home.parent / "contracts.yaml"
    contracts.write_text("tools:\n" + "".join(
        f"  {t.name}:\n    side_effect: read_only\n    target: 'test:a'\n" for t in tools))
    results: list[Any] = []
    refused: list[InputError] = []
    with Runtime(home, config=make_config()) as rt:

        async def main() -> None:
            async with create_connected_server_and_client_session(
                answering_server(answers, called)) as session:
                try:
                    upstream = Upstream(session, "memory", output_checkers(tools))
                    register(rt, upstream, tools, load_contracts(contracts),
                             prefix="test.up.", allow_undeclared_read=False)
                except InputError as exc:  # the proxy's start refused
                    refused.append(exc)
                    return

                results.extend(await anyio.to_thread.run_sync(submit_each, rt, proposals))

        anyio.run(main)
    if refused:
        raise refused[0]
    return results, called


def _call(pid: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return proposal(pid, "test.up." + tool, arguments, agent="agent:tester", target="test:a")


def _settled(results: list[Any]) -> list[OutcomeStatus]:
    for out in results:
        assert not isinstance(out, BaseException), f"raised {type(out).__name__}: {out}"
    return [out.status for out in results]


def test_an_upstreams_patterns_never_reach_a_backtracking_engine(
        home: Path, re_calls: ReCalls) -> None:
    grep = types.Tool(
        name="grep", inputSchema={"type": "object", "properties": {
            "q": {"type": "string", "pattern": EVIL}},
            "patternProperties": {EVIL: {"type": "integer"}}},
        outputSchema={"type": "object", "patternProperties": {EVIL: {"type": "string"}},
                      "additionalProperties": False})
    attack = "a" * 40 + "!"
    results, called = _proxy(home, [grep], {"grep": {"a" * 30: "fine", attack: "no"}}, [
        _call("p-in", "grep", {"q": attack}),  # 2^40 steps of `re` before
        _call("p-key", "grep", {"q": "aaa", "a" * 40: "not an integer"}),
        _call("p-out", "grep", {"q": "aaa"}),  # the answer breaks the output schema
    ])
    assert _settled(results) == [OutcomeStatus.DENIED, OutcomeStatus.DENIED,
                                 OutcomeStatus.FAILED], results
    assert called == ["grep"]
    assert re_calls.patterns == []


def test_unique_items_is_checked_in_one_pass(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compared = 0
    original = jsonschema._utils.equal

    def counted(one: Any, two: Any) -> bool:
        nonlocal compared
        compared += 1
        return bool(original(one, two))

    monkeypatch.setattr(jsonschema._utils, "equal", counted)
    bag = types.Tool(name="bag", inputSchema={"type": "object", "properties": {
        "xs": {"type": "array", "uniqueItems": True}}})
    xs = [{"n": i} for i in range(3000)]
    results, called = _proxy(home, [bag], {}, [
        _call("p-many", "bag", {"xs": xs}), _call("p-twice", "bag", {"xs": [*xs, {"n": 7.0}]})])
    assert _settled(results) == [OutcomeStatus.EXECUTED, OutcomeStatus.DENIED]
    assert called == ["bag"]
    assert compared <= 2 * len(xs), compared  # 4.5 million before


@pytest.mark.parametrize(("where", "schema", "said"), [
    ("input", {"$ref": "#"}, "loops"),
    ("output", {"type": "object", "allOf": [{"$ref": "#"}]}, "loops"),
    ("input", {"$defs": CHAIN["$defs"], "$ref": "#/$defs/d0"}, "loops"),
    ("input", {"type": "object", "properties": {"q": {"pattern": "(?<=a)b"}}}, "look-around"),
    ("output", {"type": "object", "properties": {"q": {"pattern": r"(a)\1"}}},
     "backreferences"),
    ("input", {"type": "object", "unevaluatedProperties": False,
               "patternProperties": {EVIL: {}}}, "unevaluatedProperties"),
], ids=["ref-loop-input", "ref-loop-output", "anyof-chain", "look-around", "back-reference",
        "unevaluated-patterns"])
def test_a_schema_that_cannot_be_checked_in_bounded_work_refuses_the_tool_at_start(
        home: Path, where: str, schema: dict[str, Any], said: str) -> None:
    tool = types.Tool(name="deep", inputSchema=schema if where == "input" else {
        "type": "object"}, outputSchema=schema if where == "output" else None)
    with pytest.raises(InputError) as caught:
        _proxy(home, [tool], {}, [])
    message = caught.value.message
    assert f"`deep` declares an {where} schema the proxy refuses" in message, message
    assert said in message, message


@pytest.mark.parametrize("schema", [
    {"type": "object", "required": "q"},  # checked nothing: the call executed
    {"type": "object", "properties": {"q": {"type": "string", "minLength": "x"}}},  # TypeError
    {"type": "object", "properties": {"q": {"type": 12}}},  # denied every call
], ids=["required-not-a-list", "min-length-not-a-number", "type-not-a-name"])
def test_an_input_schema_the_metaschema_refuses_refuses_the_tool_at_start(
        home: Path, schema: dict[str, Any]) -> None:
    """Found after this file's review: the output schema was checked against the 2020-12
    metaschema at start, the input schema was not — ``"required": "q"`` checked nothing
    and the call executed; ``"minLength": "x"`` failed every call with gate 1's
    ``TypeError``."""
    tool = types.Tool(name="bad", inputSchema=schema)
    with pytest.raises(InputError) as caught:
        _proxy(home, [tool], {"bad": {"ok": 1}}, [_call("p1", "bad", {"q": "abc"})])
    assert "`bad` declares an invalid input schema" in caught.value.message, caught.value


def test_a_loop_only_some_values_reach_fails_that_call_closed(home: Path) -> None:
    looping = {"type": "object", "if": {"type": "object", "required": ["deep"]},
               "then": {"$ref": "#"}}
    tools = [types.Tool(name="loop", inputSchema=looping),
             types.Tool(name="chain", inputSchema=CHAIN)]
    results, called = _proxy(home, tools, {}, [
        _call("p-loop", "loop", {"deep": 1}), _call("p-chain", "chain", {"v": 5}),
        _call("p-fine", "loop", {"shallow": 1})])
    assert _settled(results) == [OutcomeStatus.DENIED, OutcomeStatus.DENIED,
                                 OutcomeStatus.EXECUTED], results
    assert any("loops or repeats itself" in r for r in results[0].reasons), results[0].reasons
    assert called == ["loop"]


UPSTREAM = upstream_script(
    '[{"name": n, "inputSchema": s} for n, s in TOOLS.items()]',
    r'''    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": "{\"ok\": true}"}],
            "structuredContent": {"ok": True}, "isError": False}})
''', prelude="TOOLS = json.loads(sys.argv[1])\n")


def _argv(home: Path, tmp: Path, tools: dict[str, Any]) -> list[str]:
    (tmp / "hostile.py").write_text(UPSTREAM)
    (tmp / "contracts.yaml").write_text("tools:\n" + "".join(
        f"  {n}:\n    side_effect: read_only\n    target: 'test:{n}'\n" for n in tools))
    return ["mcp", "proxy", "--home", str(home), "--agent", AGENT, "--contracts",
            str(tmp / "contracts.yaml"), "--prefix", "test.up.", "--",
            sys.executable, str(tmp / "hostile.py"), json.dumps(tools)]


def test_a_real_proxy_stays_responsive_and_refuses_a_loop_in_one_line(
        home: Path, tmp_path: Path) -> None:
    capped_proxy_home(home)
    evil = {"type": "object", "properties": {"q": {"type": "string", "pattern": EVIL}}}
    proxy = JsonLinesProcess(_argv(home, tmp_path, {"grep": evil, "fine": {
        "type": "object"}}), stderr=subprocess.DEVNULL, client="client")
    try:
        proxy.request(2, "tools/call", {"name": "test.up.grep",
                                        "arguments": {"q": "a" * 64 + "!"}})
        refused = proxy.wait_for(lambda m: m.get("id") == 2, timeout=60)  # 2^64 steps before
        # (the regex itself is not quoted to the agent of an unpinned tool: test_137)
        assert "does not satisfy the tool's `pattern`" in failed_text(refused), refused
        proxy.request(3, "tools/call", {"name": "test.up.fine", "arguments": {}})
        fine = proxy.wait_for(lambda m: m.get("id") == 3)
        assert fine["result"]["structuredContent"] == {"ok": True}, fine
    finally:
        assert proxy.stop() == 0
    started = subprocess.run(
        [sys.executable, "-m", "cradle_kg", *_argv(home, tmp_path, {"loop": {"$ref": "#"}})],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert started.returncode == 2, (started.stdout, started.stderr)
    assert "Traceback" not in started.stderr, started.stderr
    lines = started.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "`loop` declares an input schema the proxy refuses" in lines[0], lines
