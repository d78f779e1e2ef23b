"""Strict replay runs a run under the pack versions that decided it.

Finding: a home records a run under its pack ``acme.rules`` 1.0.0; the operator installs
1.1.0 beside it (a new validator that denies the recorded credit) and the home, naming the
pack by its id, now loads 1.1.0. ``replay --strict`` of the *old* run built its scratch home
from the home's ``config.json`` as it is now and decided the old proposal under 1.1.0: it
diverged at the old run's ``decision.made`` (``pack_versions`` named 1.1.0, and the new
validator, with no recorded answer, failed closed) although the run, the journal and the
pack that decided it (1.0.0, still installed) were all intact. The journal named the pack
versions of each decision but nothing of their files.
Now: every ``decision.made`` of a runtime with packs records each pack's digest
(``pack_digests``: ``id@version`` -> ``sha256:`` of the pack folder's files), and strict
replay loads, for each run, exactly the versions its decisions recorded, from the home's
installed packs, side by side with newer ones. Both runs replay, each under its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.storage.opening import open_home_journal
from cradle_kg.workflow.replay import strict_replay
from tests.security.pack_versions import NEW, OLD, record_under_old, upgrade

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_old_run_replays_under_its_pack_version_after_an_upgrade(home: Path) -> None:
    old_run = record_under_old(home)
    new_run = upgrade(home)
    with open_home_journal(home) as journal:
        decisions = {e.run_id: e.payload for e in journal.events_of_kind("decision.made")}
    # the journal names each decision's packs with the digest of their files
    old_digests = decisions[old_run].get("pack_digests", {})
    assert set(old_digests) == set(decisions[old_run]["decision"]["pack_versions"])
    assert old_digests[OLD].startswith("sha256:"), old_digests
    assert decisions[new_run]["pack_digests"][NEW] != old_digests[OLD]
    # before: ReplayDivergenceError "diverges at seq 10 (`decision.made`): ... differs"
    report = strict_replay(home, [old_run])
    assert report.runs == [old_run]
    # every run, each under the versions it recorded: 1.1.0's denial reproduced too
    assert strict_replay(home).runs == [old_run, new_run]
