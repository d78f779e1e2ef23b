"""A policy folder that vanishes under a running runtime fails closed, not open.

Attack: the runtime follows the home's policy files while it runs (``test_200``); a
path in the set that does not exist is left out of it — right for a home that never had
one, wrong for one that was in force a moment ago. The incident's ``forbid`` lives in the
home's ``policies/`` (the permits come from the packs); that folder is a link to a
mounted configuration volume, and the volume goes away (an unmount, a failed
deployment that swaps the folder in two steps, a link left dangling): the running server
read the set again without the home's policies, journaled it as activated, and the
frozen credits executed — a widening nobody wrote.

What must hold: a policy path that was in the set when it loaded and is gone now makes
the set unloadable (``policy_set_unloadable``: every proposal denied, saying which path)
until it is back; a path that never existed is still no policy.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime

from .homes import FREEZE, credit
from .mcp_http import fresh

pytestmark = pytest.mark.usefixtures("journal_backend")

def test_a_policy_folder_gone_denies_every_call(tmp_path: Path) -> None:
    home = fresh(tmp_path, "home")
    base, volume = tmp_path / "base", tmp_path / "volume"
    (home / "policies").rename(base)  # the permits: a folder of their own
    volume.mkdir()
    (volume / "incident.cedar").write_text(FREEZE)
    os.symlink(volume, home / "policies")  # the home's forbids on a mounted volume
    with Runtime(home, graph_sync=False) as rt:
        rt.add_policy_paths([base])
        assert rt.submit(credit("c0")).status is OutcomeStatus.DENIED  # frozen
        volume.rename(tmp_path / "unmounted")  # the link dangles
        out = rt.submit(credit("c1"))
        assert out.status is OutcomeStatus.DENIED, out  # before: executed
        assert out.decision is not None
        assert out.decision.reason_codes == ("policy_set_unloadable",), out
        assert any("policies" in r for r in out.reasons), out
        (tmp_path / "unmounted").rename(volume)  # back
        out = rt.submit(credit("c2"))
        assert out.status is OutcomeStatus.DENIED, out
        assert any("credits are frozen" in r for r in out.reasons), out
        (volume / "incident.cedar").unlink()  # the incident is over: a file removed
        assert rt.submit(credit("c3")).status is OutcomeStatus.EXECUTED
