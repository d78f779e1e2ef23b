"""Commit-time check with the packs' projections and postcondition shapes vs without.

    .venv/bin/python bench/bench_commit_check.py [--rounds 5]

Builds the demo home (both pilot packs) in a temp dir, then replays every commit of its
journal — the verification and the transition of each verified action — through the
integrity check, in the same process, two ways:

- **core**: the integrity rules only (what a Runtime without packs checks);
- **packs**: the integrity rules plus the customs and infra shapes, with the packs'
  projection hooks feeding the run graph, plus the tool's postcondition shapes evaluated
  on the verifier's recorded observation (gate 2's SHACL, which runs just before).

Prints p50/p95 per run commit for each and the ratio; then the same with ``gc.freeze()``
after start-up, to show how much of the difference is the garbage collector walking the
larger heap. No timing assertion anywhere: figures are for the README.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cradle_kg import Runtime
from cradle_kg.canonical import parse_iso
from cradle_kg.demo.scenario import run_demo
from cradle_kg.loop import gate2_world as world
from cradle_kg.loop.integrity import IntegrityChecker
from cradle_kg.packs.registry import PackRegistry
from cradle_kg.storage import NewEvent
from cradle_kg.verifiers import VerifierReport

PILOTS = ("customs.hs-router", "infra.uptimeharbor")


def _commits(rt: Runtime) -> list[tuple[str, list[NewEvent], Any]]:
    """(run, the two events the commit check saw, the recorded verification payload)."""
    out = []
    events = list(rt.journal.events())
    for i, ev in enumerate(events):
        if ev.kind != "verification.recorded":
            continue
        nxt = next((e for e in events[i + 1:] if e.kind == "transition.committed"
                    and e.payload.get("action_id") == ev.payload["action_id"]), None)
        if nxt is None:
            continue
        pending = [NewEvent(run_id=e.run_id, kind=e.kind, subject=e.subject, actor=e.actor,
                            at=e.at, payload=e.payload) for e in (ev, nxt)]
        out.append((ev.run_id, pending, ev.payload))
    return out


def _post(rt: Runtime, payload: dict[str, Any]) -> tuple[Any, BaseModel, VerifierReport] | None:
    tool = str(payload["verification"]["provenance"]["tool_ref"]).split("@")[0]
    if not rt.tools.has(tool):
        return None
    spec = rt.tools.get(tool)
    raw = payload.get("verifier_report")
    if not spec.postconditions or not isinstance(raw, dict):
        return None
    intent = next(e for e in rt.journal.events_for_subject(payload["action_id"])
                  if e.kind == "action.intent")
    args = spec.parse_arguments(intent.payload["action"]["arguments"])
    report = VerifierReport(checks=(), read_at=parse_iso(raw["read_at"]),
                            evidence=dict(payload.get("evidence") or {}),
                            changed=tuple(raw.get("changed") or ()))
    return spec, args, report


def _measure(checker: IntegrityChecker, commits: list[Any], posts: list[Any],
             rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        for (run, pending, _), post in zip(commits, posts, strict=True):
            start = time.perf_counter()
            problems = checker.check(run, pending)
            if post is not None:
                world.postconditions(post[0], post[1], post[2], ())
            times.append((time.perf_counter() - start) * 1000)
            assert not problems, problems
    return times


def _line(name: str, t: list[float]) -> str:
    q = statistics.quantiles(t, n=20)
    return f"{name:<34} p50 {statistics.median(t):6.2f} ms   p95 {q[18]:6.2f} ms   n={len(t)}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        run_demo(home, pilots=True)
        with Runtime(home, recover=False) as rt:
            commits = _commits(rt)
            posts = [_post(rt, c[2]) for c in commits]
            registry = PackRegistry.discover(home)
            shapes = [f for p in PILOTS for f in registry.get(p).shape_files()]
            core = IntegrityChecker(rt.journal)
            packs = IntegrityChecker(rt.journal)
            packs.add_pack(shapes=shapes, projectors=rt.projectors)
            none = [None] * len(commits)
            for checker, p in ((core, none), (packs, posts)):  # warm: caches, compiled shapes
                _measure(checker, commits, p, 1)
            for label in ("", " (gc.freeze after start-up)"):
                if label:
                    gc.collect()
                    gc.freeze()
                a = _measure(core, commits, none, opts.rounds)
                b = _measure(packs, commits, posts, opts.rounds)
                print(_line("core rules" + label, a))
                print(_line("rules + pack shapes/projections"
                            " + postconditions" + label, b))
                print(f"  ratio packs/core p50: {statistics.median(b) / statistics.median(a):.2f}"
                      f"  ({sum(p is not None for p in posts)} of {len(commits)} commits have "
                      "postcondition shapes)")


if __name__ == "__main__":
    main()
