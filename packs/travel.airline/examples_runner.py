"""``cradle-kg pack run travel.airline EXAMPLE.json``: one call through the governed loop.

An example is ``{"name", "rule", "description", "call": {"tool", "arguments",
"on_behalf_of", "facts"}, "expect": {"status", "codes"?, "missing_facts"?}}`` — the tool is
the benchmark's name; facts are ``[predicate, value]`` pairs stated by the ``on_behalf_of``
customer, or full fact objects. It runs on the home's airline database (``pack init``
first); the answer carries the outcome and whether it is the expected one.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from cradle_kg import Runtime
from cradle_kg.packs.sdk import InputError, Outcome, Tool

from . import tools
from .setup import AGENT


def target_of(tool: str, arguments: Mapping[str, Any]) -> str:
    """The target the arguments name, derived as MCP and LangGraph derive it
    (``ToolSpec.derive_target``): the same call is the same proposal on every route. An id
    that is missing or not a string names no one reservation or customer — the tool's
    pattern is then ``reservation:*`` / ``customer:*`` and the target ``reservation:`` /
    ``customer:``; the API answers the call with its own error."""
    declared = getattr(tools, tool, None)
    if not isinstance(declared, Tool):
        return f"tool:airline.{tool}"  # not one of the pack's tools: gate 1 says so
    return declared.spec.derive_target(arguments)


def proposal(call: Mapping[str, Any], *, pid: str | None = None) -> dict[str, Any]:
    """A proposal from a benchmark call and the customer it is made for."""
    tool = str(call["tool"]).removeprefix("airline.")
    who = call.get("on_behalf_of")
    facts = []
    for fact in call.get("facts", []):
        if isinstance(fact, Mapping):
            facts.append(dict(fact))
        else:
            predicate, value = fact
            facts.append({"subject": who, "predicate": predicate, "object": value,
                          "source": who})
    pid = pid or f"ex-{uuid.uuid4().hex[:12]}"
    return {"id": pid, "task_id": call.get("task_id", "task-" + pid), "agent_id": AGENT,
            "on_behalf_of": who, "facts": facts,
            "action": {"action_type": f"airline.{tool}",
                       "target": call.get("target") or target_of(tool, call["arguments"]),
                       "arguments": dict(call["arguments"])}}


def summary(outcome: Outcome) -> dict[str, Any]:
    d = outcome.decision
    obs = outcome.observation
    return {"status": str(outcome.status),
            "codes": list(d.reason_codes) if d else [],
            "missing_facts": list(d.missing_facts) if d else [],
            "reasons": list(outcome.reasons),
            "output": obs.output.get("output") if obs is not None else None}


def matches(got: Mapping[str, Any], expect: Mapping[str, Any]) -> bool:
    return all(got.get(k) == v for k, v in expect.items())


def run_example(runtime: Runtime, example: Mapping[str, Any]) -> dict[str, Any]:
    if "call" not in example:
        raise InputError("an airline example has a `call` (tool, arguments, on_behalf_of, "
                         "facts)")
    got = summary(runtime.submit(proposal(example["call"])))
    expect = dict(example.get("expect", {}))
    return {"name": example.get("name"), "rule": example.get("rule"), **got,
            "expected": expect, "as_expected": matches(got, expect)}
