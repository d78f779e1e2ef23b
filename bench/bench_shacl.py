"""SHACL engines on one run graph: pySHACL (baseline) vs the Rust ``shacl`` engine.

    .venv/bin/python bench/bench_shacl.py [--repeat N] [--nquads FILE [--timeout S]]

Targets (commit-time check of one run): Rust p50 < 2 ms and >= 100x faster than
pySHACL on the same graph, measured here in the same process. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from rdflib import Dataset, Graph

from cradle_kg.graph.rdfio import read_rdf
from cradle_kg.graph.shacl import PyShaclEngine, RustShaclEngine, load_shapes, union_graph

_PREFIXES = """@prefix cradle: <https://w3id.org/cradle#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix run: <https://example.org/run/r-42/> .
@prefix id: <https://example.org/id/> .
"""
_H = "sha256:" + "ab" * 32


def one_run_turtle() -> str:
    """A conforming run: proposal, decision, approval, action, observation, facts,
    evidence, verification, transition and audit events (about 110 triples)."""
    body = f"""
run:run a cradle:Run ; cradle:runId "r-42" .
id:agent a cradle:Agent ; cradle:proposes run:proposal .
run:task a cradle:Task ; cradle:inRun run:run .
run:intent a cradle:Intent ; cradle:inRun run:run .
run:proposal a cradle:Proposal ; cradle:contains run:action ; cradle:inRun run:run .
run:policy a cradle:Policy ; cradle:evaluates run:context .
run:context a cradle:Context ; cradle:environment "production" .
run:decision a cradle:Decision ; cradle:verdict cradle:Allow ; cradle:evaluates run:proposal ;
    cradle:grantedTo id:agent ; cradle:decidedAt "2025-03-01T10:00:00Z"^^xsd:dateTime ;
    cradle:policyVersion "policies@7" ; cradle:packVersion "infra.uptimeharbor@0.1.0" ;
    cradle:policyId "prod-deploy-needs-approval" ; cradle:reason "approved change" ;
    cradle:decisionFor run:action ; cradle:inRun run:run .
run:approval a cradle:HumanApproval ; cradle:authorizes run:decision ;
    cradle:approvalStatus cradle:Approved ; cradle:approver id:alice ;
    cradle:expiresAt "2025-03-02T10:00:00Z"^^xsd:dateTime ; cradle:scope "deploy" .
run:tool a cradle:Tool ; cradle:sideEffectClass cradle:Irreversible ; cradle:toolVersion "1.4.2" .
run:action a cradle:Action ; cradle:invokes run:tool ; cradle:targets run:service ;
    cradle:riskLevel cradle:HighRisk ; cradle:sideEffectClass cradle:Irreversible ;
    cradle:authorizedBy run:decision ; cradle:executedBy id:agent ;
    cradle:executedAt "2025-03-01T10:05:00Z"^^xsd:dateTime ; cradle:idempotencyKey "r-42/1/1" ;
    cradle:attempt 1 ; cradle:inputHash "{_H}" ; cradle:outputHash "{_H}" ;
    cradle:requires run:permission ; cradle:isGovernedBy run:policy ;
    cradle:hasObservation run:obs ; cradle:hasVerification run:verification ;
    cradle:inRun run:run .
run:permission a cradle:Permission ; cradle:scope "deploy:prod" .
run:service a cradle:Resource .
run:state a cradle:ResourceState .
run:obs a cradle:Observation ; cradle:outputHash "{_H}" ; cradle:supports run:fact1 .
run:fact1 a cradle:Fact ; cradle:verificationStatus cradle:Verified ; cradle:isSupportedBy run:ev1 .
run:fact2 a cradle:Fact ; cradle:verificationStatus cradle:Verified ; cradle:source run:registry .
run:fact3 a cradle:Fact ; cradle:verificationStatus cradle:Unverified .
run:registry a cradle:TrustedSource .
run:ev1 a cradle:Evidence ; cradle:contentHash "{_H}" .
run:verification a cradle:Verification ; cradle:verificationStatus cradle:Verified ;
    cradle:checks run:transition .
run:transition a cradle:StateTransition ; cradle:changes run:state ;
    cradle:transitionOf run:action ;
    cradle:committedAt "2025-03-01T10:06:00Z"^^xsd:dateTime .
"""
    events = "".join(
        f"""run:event{n} a cradle:RuntimeEvent ; cradle:seq {n} ; cradle:eventKind "step" ;
    cradle:eventHash "{_H}" ; cradle:prevHash "{_H}" ;
    cradle:at "2025-03-01T10:0{n}:00Z"^^xsd:dateTime ;
    cradle:actor id:agent ; cradle:inRun run:run .
run:audit{n} a cradle:AuditEvent ; cradle:records run:event{n} .
"""
        for n in range(1, 5)
    )
    return _PREFIXES + body + events


def one_run_graph() -> Dataset:
    return read_rdf(one_run_turtle(), "turtle")


def _timings(fn: Callable[[], object], repeat: int) -> list[float]:
    fn()  # warm-up: first-call costs are not what a commit pays
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return sorted(out)


def _pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


def bench_one_run(repeat: int) -> None:
    shapes = load_shapes()
    rust, py = RustShaclEngine(shapes), PyShaclEngine(shapes)
    ds = one_run_graph()
    graph = union_graph(ds)
    nt = graph.serialize(format="nt")
    print(f"one-run graph: {len(graph)} triples, {len(shapes.graph)} shape triples")
    for engine in (rust, py):
        r = engine.validate(ds)
        print(f"  {engine.name}: conforms={r.conforms} violations={len(r.violations)}")
    cases = {
        "pyshacl (rdflib Graph)": (lambda: py.validate(graph), max(20, repeat // 50)),
        "rust (N-Triples text)": (lambda: rust.validate(nt, format="nt"), repeat),
        "rust (rdflib Dataset)": (lambda: rust.validate(ds), repeat),
    }
    p50: dict[str, float] = {}
    for label, (fn, n) in cases.items():
        t = _timings(fn, n)
        p50[label] = _pct(t, 0.5)
        print(f"  {label:26s} n={n:5d} p50={_pct(t, .5) * 1e3:8.3f} ms  "
              f"p99={_pct(t, .99) * 1e3:8.3f} ms  mean={statistics.fmean(t) * 1e3:8.3f} ms")
    base = p50["pyshacl (rdflib Graph)"]
    for label in ("rust (N-Triples text)", "rust (rdflib Dataset)"):
        ratio = base / p50[label]
        ok = ratio >= 100 and p50[label] < 0.002
        print(f"  {label}: {ratio:6.0f}x faster than pyshacl; "
              f"targets (>=100x, p50<2ms): {'MET' if ok else 'NOT MET'}")


def _pyshacl_worker(path: str, out: mp.Queue[tuple[bool, int, float]]) -> None:
    start = time.perf_counter()
    graph: Graph = union_graph(read_rdf(path, "nquads"))
    r = PyShaclEngine(load_shapes()).validate(graph)
    out.put((r.conforms, len(r.violations), time.perf_counter() - start))


def bench_big_nquads(path: Path, *, timeout: float = 600.0) -> None:
    """Validate a large N-Quads dump with both engines; pySHACL in a child process
    killed after ``timeout`` seconds (it does not finish on a 1M-triple store)."""
    text = path.read_text(encoding="utf-8")
    start = time.perf_counter()
    r = RustShaclEngine(load_shapes()).validate(text, format="nquads")
    print(f"rust: {time.perf_counter() - start:8.2f} s  conforms={r.conforms} "
          f"violations={len(r.violations)}")
    queue: mp.Queue[tuple[bool, int, float]] = mp.Queue()
    proc = mp.Process(target=_pyshacl_worker, args=(str(path), queue))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        print(f"pyshacl: did not finish within {timeout:.0f} s (killed)")
        return
    conforms, n, secs = queue.get()
    print(f"pyshacl: {secs:8.2f} s  conforms={conforms} violations={n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--nquads", type=Path)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    bench_one_run(args.repeat)
    if args.nquads:
        bench_big_nquads(args.nquads, timeout=args.timeout)


if __name__ == "__main__":
    main()
