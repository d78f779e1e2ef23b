"""A run whose pack version is no longer installed is refused by name, not replayed.

Finding: with ``acme.rules`` 1.0.0 removed after a run it decided (1.1.0 installed in its
place), ``replay --strict`` of that run decided it again under 1.1.0 and ended in a
divergence at its ``decision.made`` ("`payload.decision.pack_versions[…]` differs") — the
reader could not tell a tampered journal from an upgraded pack; ``replay --live``
reported the new version's denial as if the rules had changed nothing but the verdict.
Now: strict replay refuses before it replays anything, naming the pack, the version and
digest the run recorded and the versions installed (``PackVersionError``, a
``ReplayDivergenceError``: exit 1 as the other refusals of ``replay --strict``, one
``error:`` line); live replay still runs and lists the pack as a difference (category
``pack``: recorded ``acme.rules@1.0.0 (sha256:…)``, replayed ``acme.rules@1.1.0 (…)``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.records import Proposal
from cradle_kg.workflow import LiveSettings, live_replay
from cradle_kg.workflow.replay import strict_replay
from tests.packs.conftest import cli
from tests.security.homes import credit
from tests.security.pack_versions import (
    NEW,
    OLD,
    STRICT,
    old_folder,
    record_under_old,
    upgrade,
    write_pack,
)

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_removed_version_is_refused_by_name(home: Path) -> None:
    old_run = record_under_old(home)
    upgrade(home)
    shutil.rmtree(old_folder(home))
    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(home, [old_run])
    message = caught.value.message
    # before: "strict replay of `run:task-p-old` diverges at seq 10 (`decision.made`): ..."
    assert f"`{OLD}`" in message and "not installed" in message, message
    assert f"`{NEW}`" in message, message  # what is installed instead
    assert "sha256:" in message, message  # the recorded digest

    done = cli("replay", old_run, "--strict", "--home", str(home))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "not installed" in done.stderr, done.stderr

    # live replay: runs, and says the pack it decided under is not the recorded one
    report = live_replay(home, [old_run], LiveSettings())
    packs = [c for c in report.changes if c.category == "pack"]
    assert [(c.subject, str(c.recorded).split()[0], str(c.replayed).split()[0])
            for c in packs] == [("acme.rules", OLD, NEW)], report.changes
    live = cli("replay", old_run, "--live", "--home", str(home))
    assert live.returncode == 1 and "Traceback" not in live.stderr, live.stdout + live.stderr
    assert f"pack acme.rules #1: {OLD}" in live.stdout, live.stdout


def test_run_decided_under_two_versions_is_refused(home: Path) -> None:
    """One run, a proposal under 1.0.0 and, after the upgrade, one under 1.1.0: a replay
    runs a run under one set of packs, so strict replay says it cannot (before: the
    divergence at the run's first event, as above)."""
    run = record_under_old(home)
    write_pack(home / "packs" / "rules-1.1.0", "1.1.0", STRICT)
    with Runtime(home, graph_sync=False) as rt:
        out = rt.submit(Proposal.model_validate(credit("p-later", amount=5, run=run)))
    assert out.run_id == run and out.decision is not None
    assert NEW in out.decision.pack_versions
    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(home, [run])
    message = caught.value.message
    assert "more than one set of packs" in message, message
    assert f"`{OLD}`" in message and f"`{NEW}`" in message, message
