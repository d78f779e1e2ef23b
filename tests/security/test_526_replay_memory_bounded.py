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

from pathlib import Path

import pytest

from bench.bench_replay_memory import measure, write_run

SMALL, LARGE = 20, 80


@pytest.mark.sqlite_only("the bytes a replay allocates are measured in this process: a "
                         "PostgreSQL journal's client adds its own, the same for both")
def test_a_replays_memory_does_not_follow_the_journal(tmp_path: Path) -> None:
    write_run(tmp_path / "small", SMALL)
    write_run(tmp_path / "large", LARGE)
    small, large = measure(tmp_path / "small")[1:], measure(tmp_path / "large")[1:]
    decoded = large[0] - small[0]
    assert decoded > 0, (small, large)
    # what the source keeps open: positions and ids, not the events (before: all of them)
    assert large[1] - small[1] < decoded / 4, (small, large)
    # the replay's peak grows with what the runtime itself holds of a run, not with the
    # recorded events (before: more than the decoded journal's growth)
    assert large[2] - small[2] < decoded / 2, (small, large)
