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
from cradle_kg.packs.sdk import InputError, Outcome

from .setup import AGENT

TARGET = {"book_reservation": "customer:{user_id}", "send_certificate": "customer:{user_id}",
          "get_user_details": "customer:{user_id}",
          "search_direct_flight": "airline:flights", "search_onestop_flight": "airline:flights",
          "list_all_airports": "airline:airports", "calculate": "airline:calculator",
          "transfer_to_human_agents": "airline:human-agents", "think": "airline:notes"}


class _AsSent(dict[str, Any]):
    """An argument missing from a malformed call names no one: an empty id (the tool's
    target then accepts any target of that kind, the API answering the call's error)."""

    def __missing__(self, key: str) -> str:
        return ""


def target_of(tool: str, arguments: Mapping[str, Any]) -> str:
    return TARGET.get(tool, "reservation:{reservation_id}").format_map(_AsSent(arguments))


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
