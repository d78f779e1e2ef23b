"""Tracing a list argument costs time linear in the list and in what the run holds.

Finding (sixth attack review): lineage traced every item of a list argument on its own —
the same value again for each repetition — and found each value's positions in a source
by scanning the whole source. Two quadratic costs in gate 1, for every proposal of the
tool in the run, from a proposal well inside the tool's 64 KiB argument limit:

* a list of one address repeated (``recipients: ["bob", "bob", …]``) against a read that
  returned it as many times (a listing, or content anyone writes): 2,000 items 14 s of
  CPU, 4,000 items 58 s;
* a list of distinct addresses against one long read holding them (a 100,000-word
  document, a small part of one tool answer's limit): 5,000 items 66 s — each value's
  sentence read again, and the whole document scanned, for every item.

The JSON API decides one call at a time, so meanwhile nobody else's call
was decided. Now a value is traced once however often a list repeats it, and a long
source's token positions are read once per trace (``RunIndex.find``, dropped when the
trace ends; the sentences' answers shared by the items): well under a second
each, the decisions the same.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cradle_kg.lineage.index import RunIndex, _leaf
from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass
from cradle_kg.tools import ToolSpec

from ..lineage.kit import Free, NoArgs, lineage_runtime, submit, verified


class Mail(BaseModel):
    recipients: list[str]
    body: str


def _decide(home: Path, read: Any, recipients: list[str]) -> tuple[Any, float]:
    """The person's request, a read answering ``read``, a first small send (the run's
    lineage index built), then the send to ``recipients``: its outcome and CPU time."""
    rt = lineage_runtime(home)
    try:
        rt.register_tool(ToolSpec(id="read_email", version="1", input_model=NoArgs,
                                  output_model=Free, side_effect_class=SideEffectClass.READ_ONLY,
                                  idempotency=IdempotencyClass.NATURAL,
                                  output_trust="untrusted"),
                         lambda call: Free(result={"body": read}))
        rt.register_tool(ToolSpec(id="send_email", version="1", input_model=Mail,
                                  output_model=Free, side_effect_class=SideEffectClass.REVERSIBLE,
                                  idempotency=IdempotencyClass.NONE, verifier="ok",
                                  target_from="mail:list", sensitive_arguments=("recipients",),
                                  choice_words=("send",), object_words=("invoice",)),
                         lambda call: Free(result="ok"))
        rt.register_verifier("ok", verified(lambda: {}))
        rt.record_input("run:t", "Summarise my inbox.", author="user:emma")
        assert submit(rt, 0, "read_email", {}, target="mail").status is OutcomeStatus.EXECUTED
        submit(rt, 1, "send_email", {"recipients": ["x"], "body": "x"}, target="mail:list")
        started = time.process_time()
        out = submit(rt, 2, "send_email", {"recipients": recipients, "body": "x"},
                     target="mail:list")
        return out, time.process_time() - started
    finally:
        rt.close()


def test_a_list_repeating_one_value_against_a_read_repeating_it(tmp_path: Path) -> None:
    out, spent = _decide(tmp_path / "home", ["bob"] * 2_000, ["bob"] * 2_000)
    assert out.status is OutcomeStatus.AWAITING_APPROVAL, out.reasons  # seen only in the read
    assert spent < 2.0, f"one decision took {spent:.1f} s of CPU"


def test_a_list_of_distinct_values_against_one_long_read(tmp_path: Path) -> None:
    words = [f"b{i}" for i in range(100_000)]
    out, spent = _decide(tmp_path / "home", " ".join(words), words[:5_000])
    assert out.status is OutcomeStatus.AWAITING_APPROVAL, out.reasons
    assert spent < 2.0, f"one decision took {spent:.1f} s of CPU"


def test_the_run_finds_what_the_leaf_finds() -> None:
    rng = random.Random(114)
    for _ in range(300):
        text = " ".join(rng.choice("abc") for _ in range(rng.randint(0, 200)))
        run = RunIndex()
        run.add(_leaf("s", "observation", "untrusted", "tool:t", "t", ("body",), 1, text))
        for _ in range(10):
            seq = [rng.choice("abc") for _ in range(rng.randint(1, 20))]
            assert run.find(0, seq) == run.leaves[0].find(seq), (text, seq)
        run.forget_positions()
