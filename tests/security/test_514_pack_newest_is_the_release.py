"""A pack named by its id alone is its newest version by semantic-version precedence.

Finding: ``PackRegistry.get("acme.rules")`` — how a home's ``config.json`` (``packs:``),
``pack run``, ``pack init`` and ``pack_home`` name a pack — took the newest version by
``(major, minor, patch)`` alone, dropping the pre-release part, and among versions equal
on those three the first folder found won (folders are read in name order). A home holding
``acme.rules`` 1.0.0 in ``packs/rules-release`` and its release candidate 1.0.0-rc.1 in
``packs/rules-candidate`` loaded the candidate: its decisions were made (and journaled,
``pack_versions``) under ``acme.rules@1.0.0-rc.1`` — whose validator did not yet deny what
the release denies — and the credit the release refuses executed. Which version was "the
newest" depended on how the folders were named. Now: versions are ordered by semantic
version precedence (a pre-release sorts before its release; its identifiers compared as
semver says: numbers as numbers, below words), whatever the folders are called.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.packs.manifest import version_key
from cradle_kg.packs.registry import PackRegistry
from cradle_kg.records import OutcomeStatus

CHECKS = '''
from cradle_kg.packs.sdk import Finding, validator

@validator("{pattern}", name="acme.rules.check")
def check(ctx, proposal, spec):
    return [Finding(code="no_credit", message="the release refuses credits")]
'''


def _pack(folder: Path, version: str, pattern: str) -> None:
    folder.mkdir(parents=True)
    (folder / "manifest.yaml").write_text(
        f"id: acme.rules\nname: rules\nversion: {version}\ncore_ontology: '>=0.1.0'\n"
        "validators: ['checks:check']\n", encoding="utf-8")
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "checks.py").write_text(CHECKS.format(pattern=pattern), encoding="utf-8")


def test_a_home_naming_the_id_loads_the_release_not_its_candidate(tmp_path: Path) -> None:
    root = tmp_path / "home"
    prepare_home(root)
    # "candidate" sorts before "release": the candidate's folder is read first
    _pack(root / "packs" / "rules-candidate", "1.0.0-rc.1", "nothing.*")
    _pack(root / "packs" / "rules-release", "1.0.0", "demo.ledger.credit")
    # before: `acme.rules@1.0.0-rc.1`
    assert PackRegistry.discover(root).get("acme.rules").ref == "acme.rules@1.0.0"
    config = load_config(root / "config.json")
    save_config(root / "config.json",
                config.model_copy(update={"packs": (*config.packs, "acme.rules")}))
    with Runtime(root) as rt:
        out = rt.submit({"id": "p-1", "task_id": "task-p-1", "agent_id": AGENT,
                         "action": {"action_type": "demo.ledger.credit",
                                    "target": "ledger:acct-f",
                                    "arguments": {"account": "acct-f", "amount": 3}}})
    assert out.decision is not None
    assert "acme.rules@1.0.0" in out.decision.pack_versions, out.decision.pack_versions
    assert out.status is OutcomeStatus.DENIED  # before: EXECUTED, under the candidate


@pytest.mark.parametrize("order", [
    # semver.org's own example of precedence, lowest first
    ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
     "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"],
    ["1.9.0", "1.10.0-rc.1", "1.10.0", "2.0.0-0", "2.0.0", "10.0.0"],
])
def test_versions_in_semantic_version_precedence(order: list[str]) -> None:
    assert sorted(reversed(order), key=version_key) == order


def test_the_newest_whatever_the_folder_names(tmp_path: Path) -> None:
    root = tmp_path / "home"
    for name, version in [("z", "1.0.0-beta.11"), ("a", "1.0.0-beta.2"), ("m", "0.9.0")]:
        _pack(root / "packs" / name, version, "nothing.*")
    assert PackRegistry.discover(root).get("acme.rules").version == "1.0.0-beta.11"
