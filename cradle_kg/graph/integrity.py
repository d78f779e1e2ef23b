"""Commit-time enforcement of the integrity rules (SHACL) on the run's graph.

Before a ``StateTransition`` commits, the run's graph — what the journal already holds for
the run plus the events about to be committed — is validated against the integrity
shapes. Any violation aborts the commit (fail closed) and the report is journaled with
the aborted transition.

The run's triples are cached per run as events are appended, so the check costs one
projection of the pending events and one validation by the Rust engine (< 2 ms).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from threading import Lock

from ..journal import GENESIS_HASH, Journal, NewEvent
from ..records import AuditEvent
from .project import event_retractions, event_triples, ntriples
from .shacl import ShaclEngine, load_shapes, make_engine
from .vocab import INTEGRITY_SHAPES_FILE


def _pending(ev: NewEvent) -> AuditEvent:
    return AuditEvent(seq=0, id="pending", run_id=ev.run_id, kind=ev.kind, subject=ev.subject,
                      actor=ev.actor, at=ev.at, payload=ev.payload, payload_hash=GENESIS_HASH,
                      prev_hash=GENESIS_HASH, hash=GENESIS_HASH)


def _fold(triples: list[str], ev: AuditEvent) -> None:
    for gone in event_retractions(ev):
        while gone in triples:
            triples.remove(gone)
    triples.extend(event_triples(ev, header=False))


class IntegrityChecker:
    """A runtime commit hook and append listener; thread-safe."""

    def __init__(self, journal: Journal, *, extra_shapes: Sequence[Path] = (),
                 engine: str = "rust", cache_runs: int = 512) -> None:
        shapes = load_shapes([INTEGRITY_SHAPES_FILE, *extra_shapes], builtin=False)
        self.engine: ShaclEngine = make_engine(engine, shapes)
        self.journal = journal
        self._cache: OrderedDict[str, list[str]] = OrderedDict()
        self._limit = cache_runs
        self._lock = Lock()

    def _run_triples(self, run_id: str) -> list[str]:
        with self._lock:
            cached = self._cache.get(run_id)
            if cached is not None:
                self._cache.move_to_end(run_id)
                return list(cached)
        triples: list[str] = []
        for ev in self.journal.events(run_id=run_id):
            _fold(triples, ev)
        with self._lock:
            self._cache[run_id] = triples
            while len(self._cache) > self._limit:
                self._cache.popitem(last=False)
        return list(triples)

    def on_append(self, events: Sequence[AuditEvent]) -> None:
        with self._lock:
            for ev in events:
                cached = self._cache.get(ev.run_id)
                if cached is not None:
                    _fold(cached, ev)

    def check(self, run_id: str, pending: Sequence[NewEvent]) -> list[str]:
        triples = self._run_triples(run_id)
        for ev in pending:
            _fold(triples, _pending(ev))
        report = self.engine.validate(ntriples(triples), format="nt")
        return [f"rule {v.rule if v.rule is not None else '-'}: {v.message} "
                f"(focus <{v.focus_node}>)" for v in report.violations]


__all__ = ["IntegrityChecker"]
