"""Overhead of a governed call over a direct call, against the floor it cannot beat.

In one process, on the same disk:

* **direct**: calling a no-op tool function directly;
* **governed**: ``Runtime.submit`` of a proposal for the same no-op tool — gate 1 with
  100 Cedar policies, the durable journal writes (intent before act), the gateway,
  gate 2 with a trivial verifier;
* **floor**: one Cedar evaluation on the parsed ``PolicySet`` of the same 100 policies,
  plus the durable journal commits a governed call needs — 3 real ``synchronous=FULL``
  SQLite commits (proposal+decision+intent before the effect; the observation;
  verification+transition+outcome) writing rows of the same sizes as the governed call's
  events, read from its journal. Serialising, hashing and chaining those rows is *ours*,
  so it counts as overhead, not as floor.

Targets (issue "Governed execution core"): overhead p50 <= 2x the floor, p99 <= 10 ms.
The same call with everything a default ``Runtime`` also does (the commit-time SHACL check
of the integrity rules and the incremental graph-store update) is printed alongside.
Run: ``.venv/bin/python bench/bench_core.py [--calls N]``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import cedarpy
from pydantic import BaseModel

from cradle_kg import Runtime, ToolCall, ToolSpec, VerifierReport, VerifyRequest
from cradle_kg.config import RuntimeConfig
from cradle_kg.records import (
    Agent,
    IdempotencyClass,
    Permission,
    SideEffectClass,
    VerificationCheck,
    VerificationStatus,
)


class Nothing(BaseModel):
    n: int = 0


class Done(BaseModel):
    ok: bool = True


def policies(count: int) -> str:
    """``count`` realistic policies; only the last one permits the bench tool."""
    out = []
    for i in range(count - 1):
        out.append(f'@id("rule-{i}")\nforbid(principal, action == Action::"other.tool.{i}", '
                   f'resource) when {{ context.environment == "production" && '
                   f'context.arguments has n && context.arguments.n > {i} }};')
    out.append('@id("bench-permit")\npermit(principal, action == Action::"bench.noop", '
               'resource) when { context.environment == "local" };')
    return "\n".join(out)


def noop(call: ToolCall) -> Done:
    return Done()


def verify(req: VerifyRequest) -> VerifierReport:
    return VerifierReport(
        checks=(VerificationCheck(name="resource_exists", status=VerificationStatus.VERIFIED),
                VerificationCheck(name="expected_state", status=VerificationStatus.VERIFIED)),
        read_at=datetime.now(UTC), evidence={"noop": True}, source="bench")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_governed(home: Path, calls: int, *, full: bool = False) -> list[float]:
    (home / "policies").mkdir(parents=True)
    (home / "policies" / "bench.cedar").write_text(policies(100))
    config = RuntimeConfig(
        agents=(Agent(id="agent:bench"),),
        permissions=(Permission(subject="agent:bench", action_type="bench.*"),),
    )
    # the configuration: gates, journal, gateway; `full` adds the commit-time SHACL
    # check and the per-submission graph sync that a default Runtime also does
    rt = Runtime(home, config=config, integrity=full, graph_sync=full)
    assert len(rt.policies) == 100
    rt.register_verifier("bench.verify", verify)
    rt.register_tool(ToolSpec(id="bench.noop", version="1", input_model=Nothing,
                              output_model=Done, side_effect_class=SideEffectClass.REVERSIBLE,
                              idempotency=IdempotencyClass.NATURAL, verifier="bench.verify",
                              target_from="bench:*"),
                     noop)
    times: list[float] = []
    for i in range(calls + 20):
        proposal = {"id": f"p{i}", "task_id": "bench", "agent_id": "agent:bench", "step": i,
                    "action": {"action_type": "bench.noop", "target": "bench:x",
                               "arguments": {"n": i}}}
        t0 = time.perf_counter()
        out = rt.submit(proposal)
        times.append(time.perf_counter() - t0)
        assert out.ok, out.reasons
    rt.close()
    return times[20:]


#: the three durable commits of a governed call, by the kinds of event each one holds
COMMITS = (("proposal.received", "decision.made", "action.intent"), ("action.observed",),
           ("verification.recorded", "transition.committed", "run.outcome"))


def commit_shape(home: Path) -> list[list[int]]:
    """Bytes of each row each commit writes, read from a governed call in ``home``'s journal."""
    conn = sqlite3.connect(str(home / "journal.sqlite"))
    sizes = {kind: int(n) for kind, n in conn.execute(
        "SELECT kind, AVG(LENGTH(payload)) FROM events GROUP BY kind")}
    conn.close()
    return [[sizes[kind] for kind in commit] for commit in COMMITS]


def bench_floor(path: Path, calls: int, shape: list[list[int]]) -> list[float]:
    """One Cedar evaluation + the same durable commits, with rows of the same sizes."""
    ps = cedarpy.PolicySet.from_str(policies(100))
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, payload TEXT)")
    request = {"principal": {"type": "Agent", "id": "agent:bench"},
               "action": {"type": "Action", "id": "bench.noop"},
               "resource": {"type": "Resource", "id": "bench:x"},
               "context": {"environment": "local", "arguments": {"n": 1}}}
    payloads = [["x" * size for size in commit] for commit in shape]
    times: list[float] = []
    for _ in range(calls + 20):
        t0 = time.perf_counter()
        assert cedarpy.is_authorized(request, ps, []).allowed
        for rows in payloads:
            conn.execute("BEGIN IMMEDIATE")
            for payload in rows:
                conn.execute("INSERT INTO t(payload) VALUES (?)", (payload,))
            conn.execute("COMMIT")
        times.append(time.perf_counter() - t0)
    conn.close()
    return times[20:]


def bench_direct(calls: int) -> list[float]:
    call = ToolCall(tool_id="bench.noop", target="bench:x", arguments=Nothing(),
                    idempotency_key="k", environment="local")
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        noop(call)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        root = Path(tmp)
        # interleave so that noise on this shared machine hits both sides alike
        floor: list[float] = []
        governed: list[float] = []
        full: list[float] = []
        chunk = max(50, args.calls // 5)
        for round_ in range(max(1, args.calls // chunk)):
            governed += bench_governed(root / f"home{round_}", chunk)
            shape = commit_shape(root / f"home{round_}")
            floor += bench_floor(root / f"floor{round_}.sqlite", chunk, shape)
            full += bench_governed(root / f"full{round_}", chunk, full=True)
        direct = bench_direct(args.calls)
    d50 = statistics.median(direct)
    overhead = [t - d50 for t in governed]
    o50, o99 = pct(overhead, 0.5), pct(overhead, 0.99)
    f50 = pct(floor, 0.5)
    ms = 1000.0
    print(f"calls per side: {len(governed)}")
    print(f"direct no-op call      p50 {d50 * 1e6:8.1f} us")
    print(f"floor (cedar + 3 durable commits, {sum(len(c) for c in shape)} rows) "
          f"p50 {f50 * ms:6.3f} ms  "
          f"p99 {pct(floor, .99) * ms:6.3f} ms")
    print(f"governed overhead      p50 {o50 * ms:6.3f} ms  p99 {o99 * ms:6.3f} ms  "
          f"({1 / statistics.mean(governed):.0f} calls/s)")
    print(f"ratio overhead/floor   p50 {o50 / f50:5.2f}x   (target <= 2.0x: "
          f"{'met' if o50 <= 2 * f50 else 'NOT met'})")
    print(f"overhead p99 target <= 10 ms: {'met' if o99 <= 0.010 else 'NOT met'}")
    full_over = [t - d50 for t in full]
    print(f"with the commit-time SHACL check and graph sync (a default Runtime): "
          f"p50 {pct(full_over, .5) * ms:6.3f} ms  p99 {pct(full_over, .99) * ms:6.3f} ms  "
          f"({1 / statistics.mean(full):.0f} calls/s)")


if __name__ == "__main__":
    main()
