"""Per-call cost of governing the airline: the same call through the runtime and through the
pack's tool function alone, side by side, on the benchmark's database.

In one process, on the same disk, on a home made by ``pack init`` from the benchmark's data:

* **direct**: the pack's tool function (``tools.write`` / ``tools.read``: the API over the
  SQLite database, one transaction, recorded under its key) called without the runtime;
* **governed**: ``Runtime.submit`` of the same call in the ``bench_core`` configuration
  (gates, durable journal, gateway, gate 2; no commit-time SHACL, no graph sync) — gate 1
  with the pack's Cedar and its validator (the API's dry run and the policy's checks on the
  database), the verifier reading the database back.

Calls: a write that respects the policy (``update_reservation_passengers`` with the
customer's yes, a new name each time so every call is a new effect) and a read
(``get_reservation_details``). Rounds interleave the two sides so that noise on a shared
machine hits both alike. Target (issue 11): governed p50 <= direct p50 + 3 ms.
Run: ``.venv/bin/python bench/bench_airline.py [--calls N] [--data DIR]``. Prints figures;
asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cradle_kg import Runtime, ToolCall
from cradle_kg.packs.declarations import PackContext
from cradle_kg.packs.registry import PackRegistry
from cradle_kg.packs.setup import init_pack

RID, OWNER = "8B92J5", "customer:aarav_lee_3563"
#: CPU time per call (this process, every thread), by side and write/read: less sensitive
#: than wall-clock to a loaded machine's disk and scheduler
CPU: dict[tuple[str, bool], list[float]] = {(side, w): [] for side in ("governed", "direct")
                                            for w in (True, False)}


def default_data() -> Path:
    if os.environ.get("AIRLINE_DATA"):
        return Path(os.environ["AIRLINE_DATA"])
    repo = Path(__file__).resolve().parents[1]
    for base in (repo.parent, repo.parent.parent):
        if (base / "shared/data/tau-airline").is_dir():
            return base / "shared/data/tau-airline"
    raise SystemExit("no benchmark data: pass --data DIR or set AIRLINE_DATA")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def passengers(i: int) -> list[dict[str, str]]:
    return [{"first_name": f"Aarav{i}", "last_name": "Lee", "dob": "1980-01-01"}]


def governed_round(rt: Runtime, start: int, calls: int, write: bool) -> list[float]:
    times = []
    for i in range(start, start + calls):
        if write:
            action = {"action_type": "airline.update_reservation_passengers",
                      "target": f"reservation:{RID}",
                      "arguments": {"reservation_id": RID, "passengers": passengers(i)}}
            facts = [{"subject": OWNER, "predicate": "airline:confirmed", "object": "yes",
                      "source": OWNER}]
        else:
            action = {"action_type": "airline.get_reservation_details",
                      "target": f"reservation:{RID}", "arguments": {"reservation_id": RID}}
            facts = []
        proposal = {"id": f"p{i}", "task_id": "bench", "agent_id": "agent:airline-assistant",
                    "step": i, "on_behalf_of": OWNER, "facts": facts, "action": action}
        t0, c0 = time.perf_counter(), time.process_time()
        out = rt.submit(proposal)
        times.append(time.perf_counter() - t0)
        CPU[("governed", write)].append(time.process_time() - c0)
        assert out.ok, out.reasons
    return times


def direct_round(fn: Callable[..., Any], ctx: PackContext, models: Any, start: int,
                 calls: int, write: bool) -> list[float]:
    times = []
    for i in range(start, start + calls):
        if write:
            args = models.UpdatePassengers(reservation_id=RID, passengers=passengers(i))
            tool = "update_reservation_passengers"
        else:
            args = models.ReservationId(reservation_id=RID)
            tool = "get_reservation_details"
        call = ToolCall(tool_id=f"airline.{tool}", target=f"reservation:{RID}",
                        arguments=args, idempotency_key=f"direct-{write}-{i}",
                        environment="local")
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn(ctx, call, tool)
        times.append(time.perf_counter() - t0)
        CPU[("direct", write)].append(time.process_time() - c0)
        assert out.ok, out.output
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--data", type=Path, default=None)
    ns = parser.parse_args()
    data = ns.data or default_data()
    with tempfile.TemporaryDirectory(prefix="bench-airline-") as tmp:
        gov_home, direct_home = Path(tmp) / "governed", Path(tmp) / "direct"
        init_pack(gov_home, "travel.airline", data=data)
        init_pack(direct_home, "travel.airline", data=data)
        pack = PackRegistry.discover(direct_home).get("travel.airline")
        tools, models = pack.resolve("tools:write"), pack.module()
        read_fn = pack.resolve("tools:read")
        import importlib

        models = importlib.import_module(f"{pack.module().__name__}.models")
        ctx = PackContext(pack_id=pack.id, version=pack.version, folder=pack.path,
                          home=direct_home, clock=lambda: datetime.now(UTC))
        results: dict[str, dict[str, list[float]]] = {
            kind: {"governed": [], "direct": []} for kind in ("write", "read")}
        rt = Runtime(gov_home, integrity=False, graph_sync=False)  # bench_core's configuration
        chunk = max(20, ns.calls // 5)
        n = 0
        # warm-up: both sides, not counted
        governed_round(rt, 10_000, 10, True)
        direct_round(tools, ctx, models, 10_000, 10, True)
        for _ in range(max(1, ns.calls // chunk)):
            for kind, write in (("write", True), ("read", False)):
                fn = tools if write else read_fn
                results[kind]["governed"] += governed_round(rt, n, chunk, write)
                results[kind]["direct"] += direct_round(fn, ctx, models, n, chunk, write)
                n += chunk
        # the pack's own share of the governed call: its validator, measured alone
        validator = pack.resolve("governed:policy")
        spec = rt.tools.get("airline.update_reservation_passengers")
        from cradle_kg.records import Proposal

        share = []
        for i in range(max(20, ns.calls // 2)):
            p = Proposal.model_validate({
                "id": f"v{i}", "task_id": "v", "agent_id": "agent:airline-assistant",
                "on_behalf_of": OWNER, "facts": [{"subject": OWNER, "source": OWNER,
                                                  "predicate": "airline:confirmed",
                                                  "object": "yes"}],
                "action": {"action_type": "airline.update_reservation_passengers",
                           "target": f"reservation:{RID}",
                           "arguments": {"reservation_id": RID, "passengers": passengers(i)}}})
            t0 = time.perf_counter()
            assert not validator.body(ctx, p, spec)
            share.append(time.perf_counter() - t0)
        rt.close()
    ms = 1000.0
    load = os.getloadavg()[0]
    print(f"calls per side and kind: {len(results['write']['governed'])}; load average "
          f"{load:.1f} on {os.cpu_count()} cores (a shared machine: figures are noisy)")
    for kind, sides in results.items():
        g, d = sides["governed"], sides["direct"]
        g50, d50 = statistics.median(g), statistics.median(d)
        print(f"{kind:<5} direct   p50 {d50 * ms:7.2f} ms  p99 {pct(d, .99) * ms:7.2f} ms")
        print(f"{kind:<5} governed p50 {g50 * ms:7.2f} ms  p99 {pct(g, .99) * ms:7.2f} ms")
        print(f"{kind:<5} difference p50 {(g50 - d50) * ms:+7.2f} ms  p99 "
              f"{(pct(g, .99) - pct(d, .99)) * ms:+7.2f} ms  (target p50 <= +3 ms: "
              f"{'met' if g50 - d50 <= 0.003 else 'NOT met'})")
        cg, cd = (statistics.median(CPU[(side, kind == "write")]) for side in
                  ("governed", "direct"))
        print(f"{kind:<5} CPU      p50 direct {cd * ms:.2f} ms, governed {cg * ms:.2f} ms: "
              f"{(cg - cd) * ms:+.2f} ms; wall ratio governed/direct x{g50 / d50:.1f}")
    print(f"of which the pack's validator (API dry run + the policy's checks on the database) "
          f"p50 {statistics.median(share) * ms:.2f} ms  p99 {pct(share, .99) * ms:.2f} ms; "
          "the rest is the core's (journal commits, gates, verification)")


if __name__ == "__main__":
    main()
