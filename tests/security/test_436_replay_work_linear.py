"""Finding: a replay's work grew with the square of the journal's length.

The brief's promise is that a run can be replayed before an auditor, whatever its size.
``cradle-kg replay`` (strict and live) re-read the whole recorded journal for every step
it triggered: whether the run is a workflow (a scan of every event), the next decision's
policy version (a scan forward), the policy set in force (a scan, and every Cedar text
parsed again: a new ``PolicyEngine`` per step), the next producible event and the next
intent's worker (a copy of the journal's tail, ``events[pos:]``, at each clock reading),
and a replayed proposal's first submission (a scan back). On this machine a run of 400
proposals (1,205 events) replayed in 5.3 s against 0.9 s for 100, 482,400 events read
by ``is_workflow`` alone; a 100,000-event run would have taken hours.

Now ``Source`` indexes the journal once (workflow runs, each run's decisions and
submissions, one engine per policy version), and the strict driver keeps the positions
of the events it must produce: each recorded event is read a bounded number of times, and
each policy set is built once. The test counts both (no clock).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.records import AuditEvent, Proposal
from cradle_kg.workflow import LiveSettings, live_replay
from cradle_kg.workflow import replay as replay_module
from cradle_kg.workflow.replay import Source, strict_replay
from tests.security.homes import credit

PROPOSALS = 120
#: reads of the recorded journal per recorded event a replay may make (a constant)
READS_PER_EVENT = 20


class CountingEvents(list[AuditEvent]):
    """The recorded events, counting each one read (iterated, indexed or sliced)."""

    reads = 0

    def __iter__(self) -> Iterator[AuditEvent]:
        for ev in super().__iter__():
            CountingEvents.reads += 1
            yield ev

    def __getitem__(self, index: Any) -> Any:
        got = super().__getitem__(index)
        CountingEvents.reads += len(got) if isinstance(index, slice) else 1
        return got


def _long_run(home: Path) -> int:
    with Runtime(home, graph_sync=False) as rt:
        for i in range(PROPOSALS):
            # allowed and denied credits alike, one run, one task
            rt.submit(Proposal.model_validate(credit(
                f"p{i}", run="run-long", task="t-long", amount=2000 if i % 2 else 10 + i)))
        return rt.journal.head()[0]


@pytest.mark.parametrize("how", ["strict", "live"])
def test_a_replay_reads_each_recorded_event_a_bounded_number_of_times(
        home: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    events = _long_run(home)
    opened = Source.open.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Source], root: Path) -> Source:
        source: Source = opened(cls, root)
        source.events = CountingEvents(source.events)
        return source

    built: list[object] = []
    real_engine = replay_module.PolicyEngine

    class CountedEngine(real_engine):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            built.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(Source, "open", classmethod(counted))
    monkeypatch.setattr(replay_module, "PolicyEngine", CountedEngine)
    CountingEvents.reads = 0
    if how == "strict":
        assert strict_replay(home, ["run-long"]).runs == ["run-long"]
    else:
        assert live_replay(home, ["run-long"], LiveSettings()).changes == []
    # before: 480,000+ reads for these ~370 events (each step re-read the journal)
    assert CountingEvents.reads <= READS_PER_EVENT * events, (CountingEvents.reads, events)
    # before: one engine (every Cedar text parsed again) per replayed step
    with Runtime(home, graph_sync=False, read_only=True) as rt:
        versions = {e.payload["version"] for e in rt.journal.events_of_kind(
            "policyset.activated")}
    assert len(built) <= len(versions), (len(built), len(versions))
