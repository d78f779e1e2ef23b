"""Finding: a replay held the whole recorded journal in memory.

``Source.open`` read every recorded event into a list (each event decoded: its payload as
Python objects, a decision's checks and policy results, an observation's output), and the
sandbox's ``Recording`` kept every observation, verification and validator answer on top:
a replay's memory followed the journal's length — the twenty-fourth review measured a run
of 100,205 events replayed strictly at a peak of 1.16 GB (the run itself was written at
156 MB), and a journal of a few million events was beyond a replay's reach.

Now the events are read from the journal as the replay asks for them
(``replay.RecordedEvents``: a window read forward, a few kept for look-ups elsewhere); the
index, the strict driver and the recording hold positions. The test measures, in one
process, how much a replay's peak grows from a run of ``SMALL`` proposals to one of
``LARGE``, against how much the recorded journal's events take decoded (what was held
before): under half of it (before: all of it and more). No timing.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest

from cradle_kg import Proposal, Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.storage.opening import open_home_journal
from cradle_kg.workflow.replay import Source, strict_replay
from tests.security.homes import credit

SMALL, LARGE = 20, 80


def _run(home: Path, n: int) -> None:
    prepare_home(home)
    with Runtime(home, graph_sync=False) as rt:
        for i in range(n):  # allowed and denied credits, one run
            rt.submit(Proposal.model_validate(credit(
                f"p{i}", run="run-long", task="t-long", amount=2000 if i % 2 else 10 + i)))


def _measured(home: Path) -> tuple[int, int, int]:
    """(the journal's events decoded and held, what an open source keeps, a strict
    replay's peak), in bytes of Python allocations."""
    gc.collect()
    tracemalloc.start()
    try:
        with open_home_journal(home, must_exist=True) as journal:
            base = tracemalloc.get_traced_memory()[0]
            held = list(journal.events())
            decoded = tracemalloc.get_traced_memory()[0] - base
            del held
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        source = Source.open(home)
        source.runs()  # indexed
        kept = tracemalloc.get_traced_memory()[0] - base
        close = getattr(source, "close", None)  # (a source held nothing open before)
        if close is not None:
            close()
        del source
        gc.collect()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        strict_replay(home)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return decoded, kept, peak


@pytest.mark.sqlite_only("the bytes a replay allocates are measured in this process: a "
                         "PostgreSQL journal's client adds its own, the same for both")
def test_a_replays_memory_does_not_follow_the_journal(tmp_path: Path) -> None:
    _run(tmp_path / "small", SMALL)
    _run(tmp_path / "large", LARGE)
    small, large = _measured(tmp_path / "small"), _measured(tmp_path / "large")
    decoded = large[0] - small[0]
    assert decoded > 0, (small, large)
    # what the source keeps open: positions and ids, not the events (before: all of them)
    assert large[1] - small[1] < decoded / 4, (small, large)
    # the replay's peak grows with what the runtime itself holds of a run, not with the
    # recorded events (before: more than the decoded journal's growth)
    assert large[2] - small[2] < decoded / 2, (small, large)
