"""Examples through the governed loop as users run them: ``cradle-kg pack run`` (in this
process, :func:`tests.inprocess.run_cli`: the command's exit code and output, without an
interpreter start per example; the infra pack's services are real processes either way)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.demo.scenario import service_processes
from tests.inprocess import run_cli

from .conftest import manifest_version, pack_dir

CUSTOMS = "customs.hs-router"
INFRA = "infra.uptimeharbor"


def _example(pack_id: str, stem: str) -> Path:
    (path,) = (pack_dir(pack_id) / "examples").glob(f"{stem}*.json")
    return path


def _pack_run(pack_id: str, example: Path, home: Path) -> dict[str, Any]:
    done = run_cli("pack", "run", pack_id, str(example), "--home", str(home),
                   env={"COLUMNS": "300"})
    assert done.returncode == 0, done.stdout + done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_the_papers_uav_example_reproduces_exactly(tmp_path: Path) -> None:
    path = _example(CUSTOMS, "01_paper_example")
    expected = json.loads(path.read_text(encoding="utf-8"))["expect"]
    out = _pack_run(CUSTOMS, path, tmp_path / "home")
    assert out["status"] == "needs_clarification"
    assert out["missing_facts"] == ["maximum_takeoff_weight", "maximum_range"]
    assert out["candidate_hs_codes"] == expected["candidate_hs_codes"]
    assert out["hs_code"] is None and out["permitted_to_finalize"] is False
    classify = out["governed"]["classify"]
    assert classify["outcome"] == "needs_clarification" and classify["verdict"] == "clarify"
    assert classify["missing_facts"] == ["maximum_takeoff_weight", "maximum_range"]
    assert classify["pack_versions"] == [f"{CUSTOMS}@{manifest_version(CUSTOMS)}"]
    assert out["governed"]["finalize"] is None and out["finalized"] is False


@pytest.mark.parametrize(("stem", "classify", "finalize"), [
    ("03_band_8806_22", "executed", "executed"),
    ("09_dual_use_9A012", "executed", "awaiting_approval"),
    ("18_bad_input_rejected", "denied", None),
    ("21_annex_not_in_force_yet", "executed", "denied"),
])
def test_customs_good_and_bad_lines(stem: str, classify: str, finalize: str | None,
                                    tmp_path: Path) -> None:
    path = _example(CUSTOMS, stem)
    expected = json.loads(path.read_text(encoding="utf-8"))["expect"]
    out = _pack_run(CUSTOMS, path, tmp_path / "home")
    assert out["status"] == expected["status"]
    assert out["hs_code"] == expected["hs_code"]
    governed = out["governed"]
    assert governed["classify"]["outcome"] == classify
    assert (governed["finalize"] or {}).get("outcome") == finalize


@pytest.mark.slow
@pytest.mark.parametrize("stem", ["live_fix_resolves_incident", "live_green_tests_still_failing",
                                  "live_staging_only_fix_fails_in_production"])
def test_infra_live_examples(stem: str, tmp_path: Path) -> None:
    path = _example(INFRA, stem)
    example = json.loads(path.read_text(encoding="utf-8"))
    home = tmp_path / "home"
    out = _pack_run(INFRA, path, home)
    assert out["ok"], [s for s in out["steps"] if not s["ok"]]
    assert out["tests"] == example["expect"]["tests"]
    last = out["steps"][-1]
    assert last["verification"] == example["expect"]["status"]
    if example["expect"]["status"] == "failed":
        assert last["outcome"] == "verification_failed"
        assert any(r.startswith("compensated:") for r in last["reasons"])
    assert service_processes(home) == []


@pytest.mark.parametrize("stem", ["scenario_staging_only_fix_rolled_back",
                                  "scenario_production_approval_rejected"])
def test_infra_failure_scenarios(stem: str, tmp_path: Path) -> None:
    path = _example(INFRA, stem)
    example = json.loads(path.read_text(encoding="utf-8"))
    home = tmp_path / "home"
    out = _pack_run(INFRA, path, home)
    assert out["ok"], [s for s in out["steps"] if not s["ok"]]
    assert out["incident_status"] == example["expect"]["incident_status"]
    assert out["production_commit"] == example["expect"]["production_commit"]
    assert service_processes(home) == []
