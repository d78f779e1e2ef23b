"""A policy file added anywhere under the policies folder decides the next call.

Finding (left open by ``test_200``): a running process reads the home's policies again
when they change (``Runtime.refresh``), watching the policies folder and its own
``*.cedar`` files. A folder's policies are its own ``*.cedar`` files; one in a subfolder is
refused when the set loads (a forbid the loader would leave out is an allow by accident),
so a home started with ``policies/drafts/freeze.cedar`` denies every call, saying why. But
a subfolder was not watched: ``freeze.cedar`` written into an existing ``policies/drafts/``
of a running ``serve`` or worker went unnoticed — calls went on executing under the old
set until a restart, which then refused the folder. Removing one was not noticed either.

Now every subfolder under a policies folder is watched too (one ``stat`` of each folder
per call: a folder's times change when an entry is added, removed or renamed; the files
in subfolders are never read, so never stated): an addition or removal anywhere under it
is read at the next decision, and the set that does not load denies it, saying why, until
it loads again (fail closed, as at start).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.loop.policies import _watched

from .homes import FREEZE, credit

pytestmark = pytest.mark.usefixtures("journal_backend")


def _status(rt: Runtime, pid: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    out = rt.submit(credit(pid, amount=5))
    return str(out.status), tuple(out.decision.reason_codes), tuple(out.reasons)


def test_a_policy_file_added_to_a_subfolder_is_read_at_the_next_call(
        ledger_home: Path) -> None:
    drafts = ledger_home / "policies" / "drafts"
    drafts.mkdir()
    (drafts / "notes.txt").write_text("ideas for later", encoding="utf-8")
    with Runtime(ledger_home, graph_sync=False) as rt:
        assert _status(rt, "c1")[0] == "executed"

        (drafts / "freeze.cedar").write_text(FREEZE, encoding="utf-8")
        status, codes, reasons = _status(rt, "c2")
        assert status == "denied", reasons  # before: executed, until a restart
        assert codes == ("policy_set_unloadable",)
        assert any("freeze.cedar" in r for r in reasons), reasons

        (drafts / "freeze.cedar").unlink()  # removed: read at the next call too
        assert _status(rt, "c3")[0] == "executed"

        # a folder made later, and a file put deeper still
        deeper = drafts / "old"
        deeper.mkdir()
        assert _status(rt, "c4")[0] == "executed"
        (deeper / "freeze.cedar").write_text(FREEZE, encoding="utf-8")
        status, codes, _ = _status(rt, "c5")
        assert status == "denied" and codes == ("policy_set_unloadable",)
        (deeper / "freeze.cedar").rename(drafts / "freeze.txt")  # moved out of the way
        assert _status(rt, "c6")[0] == "executed"


def test_the_folders_are_watched_not_every_file_under_them(ledger_home: Path) -> None:
    """What a call stats: the folders (a file added or removed changes its folder's times)
    and the folder's own ``*.cedar`` files (written in place, only the file's change)."""
    policies = ledger_home / "policies"
    (policies / "a" / "b").mkdir(parents=True)
    (policies / "a" / "b" / "readme.txt").write_text("x", encoding="utf-8")
    watched = _watched([(policies, None)])
    assert str(policies / "a") in watched and str(policies / "a" / "b") in watched
    assert str(policies / "a" / "b" / "readme.txt") not in watched
    assert str(policies / "demo.cedar") in watched
