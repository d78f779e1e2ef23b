"""Every example through the governed runtime (``adapters.run_example``), in a fresh home.

The pack-level answer must be the example's, and the governed outcomes must follow the
pack's rule: a missing fact is a gate-1 clarification (nothing runs); a rejected line is
denied; a classified line runs the read-only classification, then its finalization is
filed when permitted without permits, waits for a human when permits are required, and
is forbidden by Cedar when not permitted to finalize.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cradle_kg.packs import testing

PACK = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((PACK / "examples").glob("*.json"))
#: the outcome fields the governed runner reports (README "Outcome")
FIELDS = ("status", "hs_code", "candidate_hs_codes", "product_type", "missing_facts",
          "permits_required", "permitted_to_finalize")
VERSION = yaml.safe_load((PACK / "manifest.yaml").read_text(encoding="utf-8"))["version"]


home = testing.fixture(PACK, scope="module")


def _run(home: testing.PackHome, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    example = json.loads(path.read_text(encoding="utf-8"))
    runner = home.entry("adapters:run_example")
    result: dict[str, Any] = runner(home.runtime, {**example["input"],
                                                   "task": "ex-" + path.stem[:40]})
    return example["expect"], result


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_through_the_governed_loop(home: testing.PackHome, path: Path) -> None:
    expected, result = _run(home, path)
    for key in FIELDS:
        if key not in expected:
            continue
        value, got = expected[key], result[key]
        assert (list(got) if isinstance(got, list | tuple) else got) == value, key
    classify, finalize = result["governed"]["classify"], result["governed"]["finalize"]
    assert classify["pack_versions"] == [f"customs.hs-router@{VERSION}"]
    if result["status"] == "needs_clarification":
        assert classify["outcome"] == "needs_clarification" and finalize is None
        assert classify["missing_facts"] == result["missing_facts"]
    elif result["status"] == "rejected":
        assert classify["outcome"] == "denied" and finalize is None
    else:
        assert classify["outcome"] == "executed"
        wanted = ("denied" if not result["permitted_to_finalize"]
                  else "awaiting_approval" if result["permits_required"] else "executed")
        assert finalize["outcome"] == wanted
        assert result["finalized"] is (wanted == "executed")
        if wanted == "denied":
            assert finalize["policy_ids"] == ["customs.hs-router/missing-attribute-escalation"]
        if wanted == "executed":
            assert finalize["verification"] == "verified"


def test_a_lying_finalization_is_denied(home: testing.PackHome) -> None:
    """Claims Cedar would permit are recomputed by gate 1: a false claim never files."""
    adapters = home.entry("adapters:finalize_proposal")
    example = json.loads(EXAMPLES[0].read_text(encoding="utf-8"))  # the paper's UAV
    lie = {"status": "classified", "hs_code": "8806.21", "permitted_to_finalize": True,
           "permits_required": [], "missing_facts": [], "decision_digest": "sha256:" + "0" * 64}
    proposal = adapters(example["input"], lie, task="ex-lie", declaration_id="decl-lie")
    outcome = home.runtime.submit(proposal)
    testing.expect(outcome, "denied", codes=["claims_do_not_match_classification"])
