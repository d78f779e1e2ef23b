"""A journal written before pack digests were recorded replays as before, and says so.

Finding (what the others leave): a journal whose decisions name their pack versions but
no digest of their files (every journal written before ``test_553``) cannot tell replay
which files decided it; a strict replay that reproduces it must not read as a proof that
the installed packs are the code that ran. Before, ``replay --strict`` said "reproduced
… exactly" and nothing else.
Now: such a run replays as before (under the home's packs now) and the report says,
for each such run, "pack versions not recorded" (``StrictReport.warnings``; a
``warning:`` line on the CLI, ``warnings`` in its JSON).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.workflow.replay import strict_replay
from tests.golden.generate import GOLDEN, load
from tests.packs.conftest import cli

pytestmark = pytest.mark.usefixtures("journal_backend")

LEGACY = GOLDEN / "legacy" / "demo_before_refusal_counts"


def test_old_journal_replays_and_says_pack_versions_not_recorded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    head = load(LEGACY, home)
    report = strict_replay(home)
    assert report.head_hash == head
    # before: []
    assert report.warnings and all("pack versions not recorded" in w
                                   for w in report.warnings), report.warnings
    assert len(report.warnings) == len(report.runs)
    done = cli("replay", "--strict", "--home", str(home), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["warnings"] == report.warnings
    text = cli("replay", "--strict", "--home", str(home))
    assert "pack versions not recorded" in text.stdout + text.stderr, text.stdout
