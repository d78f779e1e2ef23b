"""A ``submit`` refused on a home that has no journal yet leaves nothing behind.

Finding (left open by the malformed-files round, ``test_275`` …): ``submit`` checked the
proposal before opening the home, so a malformed one left no trace — but a refusal decided
once the home was opened left its journal created, schema only and no event (with the
graph store's folder and the workers' leases): a proposal in another identity's run
namespace (``test_259``'s ``RunOwnershipError``, raised by the runtime's parse), and a home
whose configuration does not load (a pack it lists that is not installed, a Cedar file of
its ``policies/`` that does not parse). The next command found a journal the refused
command had made.

Now ``submit`` checks the run's namespace with the proposal, before the home is opened,
and a home without its journal file is opened first on a throwaway journal elsewhere (the
runtime's own loader: nothing a second check could miss), its journal created only once
that loads: one ``error:`` line, exit 2, the home's files as they were.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.config import load_config, save_config

from .homes import without_journal_url
from .inputcli import assert_refused, cli, credit, fresh_home

pytestmark = pytest.mark.sqlite_only(
    "a home with no journal file yet: a PostgreSQL home's schema exists before its first "
    "command, and it has no throwaway first open")


def _files(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*"))


def _unknown_pack(home: Path) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json",
                config.model_copy(update={"packs": (*config.packs, "acme.absent")}))


def _bad_policy(home: Path) -> None:
    (home / "policies" / "broken.cedar").write_text("permit(", encoding="utf-8")


CASES = {
    "run namespace": ({"run_id": "run:agent:other/1"}, None, "agent:other"),
    "unknown pack": ({}, _unknown_pack, "acme.absent"),
    "policy parse": ({}, _bad_policy, "broken.cedar"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_refused_submit_creates_no_journal(tmp_path: Path, case: str) -> None:
    extra, spoil, needle = CASES[case]
    home = fresh_home(tmp_path / "home")
    if spoil is not None:
        spoil(home)
    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps(credit("p-282", **extra)), encoding="utf-8")
    before = _files(home)
    done = cli("submit", str(proposal), "--home", str(home), env=without_journal_url(),
               timeout=120)
    assert_refused(done, needle)
    assert _files(home) == before
