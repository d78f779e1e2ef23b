"""Tracing an argument's lineage costs time linear in what the run holds.

Finding: gate 1 traces each argument of a tool with sensitive arguments (or under a
graph policy / a Cedar policy reading ``context.lineage``) through every source of the
run: for each place the value's first token occurs in a source, it compared the whole
value there. An agent that had an echoing tool write ``a a a … a b`` (30,000 tokens) into
its run a few times, then proposed a value ``a a … a b`` of 15,000 tokens, made that one
decision compare 15,000 tokens at each of 30,000 places per source — a second of CPU per
source, in gate 1, for each proposal (8 sources: about 5 s; the argument limit allows it
on every call). A value longer than a few tokens is now searched for with
Knuth-Morris-Pratt (:func:`cradle_kg.lineage.index.occurrences`): linear in the source
and the value, whatever they repeat; a short one keeps the old search (it is bounded).

Measured as this process's CPU time (not the wall clock: the machine is shared).

What holds (checked here): the search finds exactly the positions the old one did
(random sequences), and the traced proposal still executes.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from pydantic import BaseModel

from cradle_kg import Runtime, ToolSpec
from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass
from tests.conftest import EchoOut, make_config, proposal, register_test_tools

SOURCES = 8


class Text(BaseModel):
    value: str


def test_a_repetitive_value_against_repetitive_sources_is_traced_in_linear_time(
        home: Path) -> None:
    rt = Runtime(home, config=make_config())
    try:
        register_test_tools(rt)
        common: dict[str, object] = dict(
            version="1", input_model=Text, output_model=EchoOut,
            side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
            blast_radius=("test:*",), target_from="test:*", verifier="test.ok")
        rt.register_tool(ToolSpec(id="test.echo", **common),  # type: ignore[arg-type]
                         lambda call: EchoOut(value=call.arguments.value))
        rt.register_tool(ToolSpec(id="test.send", sensitive_arguments=("value",),
                                  **common),  # type: ignore[arg-type]
                         lambda call: EchoOut())
        source = "a " * 30_000 + "b"
        for i in range(SOURCES):
            assert rt.submit(proposal(f"p-echo-{i}", "test.echo", {"value": source},
                                      agent="agent:tester", target="test:a", run_id="run:l",
                                      step=i)).status is OutcomeStatus.EXECUTED
        started = time.process_time()
        out = rt.submit(proposal("p-send", "test.send", {"value": "a " * 15_000 + "b"},
                                 agent="agent:tester", target="test:a", run_id="run:l",
                                 step=SOURCES))
        spent = time.process_time() - started
        assert out.status is OutcomeStatus.EXECUTED, out.reasons
        assert spent < 2.0, f"one decision took {spent:.1f} s of CPU"
    finally:
        rt.close()


def test_the_linear_search_finds_what_the_old_one_found() -> None:
    from cradle_kg.lineage.index import occurrences

    rng = random.Random(7)
    for _ in range(2000):
        tokens = [rng.choice("ab") for _ in range(rng.randint(0, 60))]
        seq = [rng.choice("ab") for _ in range(rng.randint(1, 24))]
        expected = [i for i in range(len(tokens) - len(seq) + 1)
                    if tokens[i:i + len(seq)] == seq]
        assert occurrences(tokens, seq) == expected, (tokens, seq)
