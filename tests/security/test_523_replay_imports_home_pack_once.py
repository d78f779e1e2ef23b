"""A replay runs a home's own pack from the home's folder, imported once per process.

Finding (left open by ``test_512``): a replay's scratch home held a *copy* of the home's
``packs/`` folder, made afresh for each replay — and a strict replay makes one scratch
home per run. Since a pack's module name carries its folder (``test_512``), every copy
was imported anew: a strict replay of N runs imported the home's pack N times, and each
module (with every submodule it imported) stayed in ``sys.modules`` after its folder was
removed. A long process replaying (an embedding, a test run, a server answering replays)
grew by a pack's modules per run replayed, without bound.
Now the scratch home names the home's own packs by their folders (its ``packs`` list
resolved against the home, nothing copied): the replay imports the module the home
itself runs, once per process, and decides with the same code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.records import OutcomeStatus, Proposal
from cradle_kg.workflow import LiveSettings, live_replay
from cradle_kg.workflow.replay import strict_replay
from tests.security.homes import credit

CHECKS = '''
from cradle_kg.packs.sdk import Finding, validator

@validator("demo.ledger.credit", name="acme.own.check")
def check(ctx, proposal, spec):
    if proposal.action.arguments.get("amount", 0) > 500:
        return [Finding(code="acme_own_too_much", message="acme.own says no")]
    return []
'''
PREFIX = "cradle_pack_acme_own__"


def _home_with_own_pack(home: Path) -> None:
    folder = home / "packs" / "own"
    folder.mkdir(parents=True)
    (folder / "manifest.yaml").write_text(
        "id: acme.own\nname: own\nversion: 1.0.0\ncore_ontology: '>=0.1.0'\n"
        "validators: ['checks:check']\n", encoding="utf-8")
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "checks.py").write_text(CHECKS, encoding="utf-8")
    config = load_config(home / "config.json")
    save_config(home / "config.json",
                config.model_copy(update={"packs": (*config.packs, "acme.own")}))


def _pack_modules() -> set[str]:
    return {name for name in sys.modules if name.startswith(PREFIX)}


def test_replays_import_the_homes_pack_once(home: Path) -> None:
    _home_with_own_pack(home)
    runs = []
    with Runtime(home, graph_sync=False) as rt:
        for i, amount in enumerate((100, 900, 200)):
            out = rt.submit(Proposal.model_validate(credit(f"p{i}", amount=amount)))
            assert out.status is (OutcomeStatus.DENIED if amount > 500
                                  else OutcomeStatus.EXECUTED), out.reasons
            runs.append(out.run_id)
    loaded = _pack_modules()
    assert loaded  # the home's own, imported by its runtime
    for _ in range(2):
        assert strict_replay(home).runs == runs  # the pack's denial reproduced
        assert live_replay(home, [], LiveSettings()).changes == []
    # before: 8 more packages (one per run of each strict replay, one per live replay),
    # each of its folder copy, removed
    extra = sorted(_pack_modules() - loaded)
    assert not extra, f"{len(extra)} more modules: {extra}"
