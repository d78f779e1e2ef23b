"""A large home made by the real runtime, for the graph and SPARQL benchmarks.

Runs of the demo's ledger tools go through ``Runtime.submit`` — gates, gateway, verifier,
journal — exactly as in production; only the per-submit graph sync is off (the store is
then built in one ``graph rebuild``, which is itself measured). A mix of outcomes:
executed credits, denials by policy, a lying tool caught by gate 2, idempotent replays,
and approvals given by a second identity.

The home is cached under ``bench/out/`` (gitignored) keyed by its size.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, demo_config, prepare_home
from cradle_kg.graph.catchup import rebuild
from cradle_kg.records import ApprovalStatus
from cradle_kg.storage.oxigraph import OxigraphStore

OUT = Path(__file__).resolve().parent / "out"
AGENT = "agent:ledger-assistant"


def proposal(i: int, tool: str, args: dict[str, object]) -> dict[str, object]:
    return {"id": f"p{i}", "task_id": f"task-{i // 4}", "agent_id": AGENT, "step": i % 4,
            "action": {"action_type": tool, "target": f"ledger:{args['account']}",
                       "arguments": args}}


def approval_cycle(rt: Runtime, i: int, account: str) -> None:
    """Submit ``close_account`` (it asks for an approval), approve it as the demo's
    approver and check that the resumed run executed."""
    waiting = rt.submit(proposal(i, "demo.ledger.close_account", {"account": account}))
    assert waiting.approval is not None
    _, resumed = rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                                    token=DEMO_TOKENS[APPROVER],
                                    status=ApprovalStatus.APPROVED)
    assert resumed is not None and resumed.ok, resumed


def submit_mix(rt: Runtime, i: int) -> None:
    """The ``i``-th proposal of the mix: 1 in 20 each a denial by policy, a lying tool
    caught by gate 2 and an approval given by a second identity; 1 in 20 an idempotent
    replay; the rest executed credits."""
    kind = i % 20
    account = f"acct-{i % 997}"
    if kind == 0:
        rt.submit(proposal(i, "demo.ledger.credit", {"account": account, "amount": 5000}))
    elif kind == 1:
        rt.submit(proposal(i, "demo.ledger.credit_unreliable", {"account": account,
                                                                 "amount": 3}))
    elif kind == 2:
        waiting = rt.submit(proposal(i, "demo.ledger.close_account",
                                      {"account": f"closed-{i}"}))
        if waiting.approval is not None:
            rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                               token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
    else:
        out = rt.submit(proposal(i, "demo.ledger.credit",
                                  {"account": account, "amount": 1 + i % 50}))
        if kind == 3:
            rt.submit(proposal(i, "demo.ledger.credit", {"account": account,
                                                          "amount": 1 + i % 50}))
        assert out.ok


def _bulk_runtime(home: Path) -> Runtime:
    # the demo's rate limit (1000 calls a minute) would stop a bulk build: lift it here
    config = demo_config().model_copy(update={"limits": ()})
    rt = Runtime(home, config=config, graph_sync=False, integrity=False)
    # filling only: no fsync per commit (three per call, and the shared disk's fsyncs
    # made the fill I/O-bound: ~110 events/s instead of ~850). The events are the same;
    # a bench measures a copy of the home, opened like any other (synchronous=FULL).
    rt.journal._conn.execute("PRAGMA synchronous=OFF")  # type: ignore[attr-defined]
    return rt


def build_events_home(min_events: int, *, log: bool = True) -> Path:
    """A home whose journal holds at least ``min_events`` events, no graph (cached)."""
    home = OUT / f"events-{min_events}"
    if (home / ".complete").exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    prepare_home(home)
    started, i = time.perf_counter(), 0
    with _bulk_runtime(home) as rt:
        while rt.journal.head()[0] < min_events:
            submit_mix(rt, i)
            i += 1
            if log and i % 2000 == 0:
                print(f"  {i} proposals, {rt.journal.head()[0]} events "
                      f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    (home / ".complete").write_text(f"{i} {time.perf_counter() - started:.1f}")
    return home


def build_home(min_triples: int, *, log: bool = True) -> Path:
    """A home whose graph holds at least ``min_triples`` quads (cached)."""
    home = OUT / f"home-{min_triples}"
    if (home / ".complete").exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    prepare_home(home)
    started = time.perf_counter()
    i = 0
    with _bulk_runtime(home) as rt:
        # ~150 quads per executed submit: check the size every 500 submits
        while True:
            for _ in range(500):
                submit_mix(rt, i)
                i += 1
            head = rt.journal.head()[0]
            if log:
                print(f"  {i} proposals, {head} events ({time.perf_counter() - started:.0f} s)",
                      file=sys.stderr)
            if head * 21 >= min_triples:  # ~22 quads per event on average
                store = OxigraphStore(home / "graph")
                rebuild(store, rt.journal)
                size = len(store.store)
                store.close()
                if size >= min_triples:
                    break
    (home / ".complete").write_text(str(i))
    return home
