"""Gate 1 with lineage against gate 1 without it, over a run with N observations.

In one process, on one home: a run with a trusted request and ``--observations`` (200)
untrusted observations (emails of ~60 words, each with an IBAN, an address and a number),
then two ``send_money`` proposals through gate 1 (``Gate1.run``: pure, writes nothing) —
*clean* (the recipient is the one the request names: no rule is due) and *flagged* (an
IBAN seen only in one email: the graph policies are asked over the trace) —

* **without lineage**: the gate's input carries no lineage hook;
* **with lineage**: the trace from the run's derived index (caught up from the journal's
  watermark each time), the Cedar context, and the graph policies of
  ``packs/security.lineage`` asked over the trace's triples.

Target (issue 15): with lineage adds <= 1 ms p50. Alternating rounds, one process.
Run: ``.venv/bin/python bench/bench_lineage.py [--observations N] [--rounds R]``.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cradle_kg.config import RuntimeConfig  # noqa: E402
from cradle_kg.loop.gate1.checks import Gate1  # noqa: E402
from cradle_kg.loop.runtime import Runtime  # noqa: E402
from cradle_kg.packs.loader import load_pack  # noqa: E402
from cradle_kg.records import (  # noqa: E402
    Agent,
    IdempotencyClass,
    Permission,
    Proposal,
    SideEffectClass,
)
from cradle_kg.tools import ToolSpec  # noqa: E402

AGENT = "agent:bench"
WORDS = ["please", "note", "the", "invoice", "for", "march", "is", "attached", "and",
         "the", "payment", "is", "due", "soon", "kindly", "confirm", "the", "amount", "with",
         "our", "office", "before", "friday", "thanks", "a", "lot"]


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")
    result: Any = None


class NoArgs(BaseModel):
    n: int = 0


class Send(BaseModel):
    recipient: str
    amount: float
    subject: str


def _email(i: int) -> Out:
    body = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(50))
    return Out(result={"sender": f"sender{i}@example.com", "subject": f"invoice {i}",
                       "body": f"{body}. Pay {100 + i}.50 to DE{i:02d}500105170648489{i:03d} "
                               f"at {i} Main Street."})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--observations", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=400)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-lineage-") as tmp:
        home = Path(tmp) / "home"
        (home / "policies").mkdir(parents=True)
        (home / "policies" / "all.cedar").write_text(
            '@id("all")\npermit(principal, action, resource);\n')
        rt = Runtime(home, config=RuntimeConfig(agents=(Agent(id=AGENT),),
                                                permissions=(Permission(subject=AGENT),)),
                     graph_sync=False, load_plugins=False, integrity=False)
        rt.load_pack(load_pack(ROOT / "packs" / "security.lineage"))
        rt.register_tool(ToolSpec(id="read_email", version="1", input_model=NoArgs,
                                  output_model=Out, side_effect_class=SideEffectClass.READ_ONLY,
                                  idempotency=IdempotencyClass.NATURAL,
                                  output_trust="untrusted"),
                         lambda call: _email(call.arguments.model_dump()["n"]))
        rt.register_tool(ToolSpec(id="send_money", version="1", input_model=Send,
                                  output_model=Out, side_effect_class=SideEffectClass.REVERSIBLE,
                                  idempotency=IdempotencyClass.NONE, verifier="none",
                                  target_from="bank", sensitive_arguments=("recipient",),
                                  choice_words=("send", "pay", "transfer")),
                         lambda call: Out(result="ok"))
        run = "run:bench"
        rt.record_input(run, "Read my invoices and pay the one from sender7 to "
                             "DE07500105170648489007.", author="user:bench")
        for i in range(args.observations):
            rt.submit({"id": f"r{i}", "task_id": "bench", "agent_id": AGENT, "run_id": run,
                       "step": i, "action": {"action_type": "read_email", "target": "mail",
                                             "arguments": {"n": i}}})
        def proposal(name: str, recipient: str) -> Proposal:
            return Proposal.model_validate({
                "id": name, "task_id": "bench", "agent_id": AGENT, "run_id": run,
                "step": args.observations, "action": {
                    "action_type": "send_money", "target": "bank", "arguments": {
                        "recipient": recipient, "amount": 107.5, "subject": "invoice 7"}}})
        # the request's own IBAN (also in email 7): trusted origin, no rule is due
        clean = proposal("clean", "DE07500105170648489007")
        # an IBAN seen only in email 15: the graph policies are asked, a human is
        flagged = proposal("flagged", "DE15500105170648489015")
        run_index = rt.lineage.index.run(run)
        print(f"run: {run_index.observations} observations, {len(run_index.leaves)} text "
              f"leaves, {len(run_index.postings)} distinct tokens")
        timings: dict[str, list[float]] = {}
        verdicts: dict[str, str] = {}
        cases = [(f"{p.id}, {mode}", p, mode) for p in (clean, flagged)
                 for mode in ("without", "with")]
        for r in range(args.rounds):
            for label, prop, mode in (cases if r % 2 else cases[::-1]):
                gate_input = rt._gate_input(rt.clock(), run_id=run)
                if mode == "without":
                    gate_input.lineage = None
                t0 = time.perf_counter()
                result = Gate1(gate_input).run(prop)
                timings.setdefault(label, []).append((time.perf_counter() - t0) * 1000)
                verdicts[label] = str(result.verdict)
        rt.close()
    p50 = {k: statistics.median(v) for k, v in timings.items()}
    p99 = {k: statistics.quantiles(v, n=100)[98] for k, v in timings.items()}
    print(f"{'gate 1':<28}{'p50 ms':>10}{'p99 ms':>10}  verdict")
    for label, _, _ in cases:
        print(f"{label + ' lineage':<28}{p50[label]:>10.3f}{p99[label]:>10.3f}  "
              f"{verdicts[label]}")
    for name in ("clean", "flagged"):
        base, lined = p50[f"{name}, without"], p50[f"{name}, with"]
        print(f"{name}: lineage adds {lined - base:+.3f} ms p50 ({lined / base:.2f}x)"
              + (", target <= +1 ms" if name == "clean" else
                 " (graph policies asked; the action then waits for a person)"))

if __name__ == "__main__":
    main()
