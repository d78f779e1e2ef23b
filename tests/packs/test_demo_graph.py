"""The demo runs both pilots; its graph validates with the packs' shapes, and every
Decision in it names its pack version (SPARQL over the home's graph store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import PAPER_MISSING_FACTS, DemoStep, service_processes
from cradle_kg.graph.shacl import load_shapes, make_engine
from cradle_kg.packs.registry import PackRegistry
from tests.graph_backends import read_home_graph

from .conftest import PILOTS, cli, manifest_version

CRADLE = "PREFIX cradle: <https://w3id.org/cradle#> "


@pytest.fixture(scope="module")
def demo(pilots_demo: tuple[Path, list[DemoStep]]) -> tuple[Path, list[DemoStep]]:
    """The session's demo home (tests/conftest.py): these tests only read it."""
    return pilots_demo


def test_every_demo_step_ends_as_expected(demo: tuple[Path, list[DemoStep]]) -> None:
    _, steps = demo
    assert [s.name for s in steps if not s.ok] == []
    names = " | ".join(s.name for s in steps)
    assert "customs:" in names and "infra:" in names and "infra (rollback):" in names


def test_the_papers_uav_reproduces_exactly(demo: tuple[Path, list[DemoStep]]) -> None:
    _, steps = demo
    (uav,) = [s for s in steps if "paper" in s.name]
    assert uav.outcome.status.value == "needs_clarification"
    assert uav.outcome.decision is not None
    assert list(uav.outcome.decision.missing_facts) == ["maximum_takeoff_weight",
                                                        "maximum_range"]
    assert tuple(uav.outcome.decision.missing_facts) == PAPER_MISSING_FACTS
    assert uav.outcome.action is None  # nothing ran


def test_no_service_process_outlives_the_demo(demo: tuple[Path, list[DemoStep]]) -> None:
    home, _ = demo
    assert service_processes(home) == []
    worlds = sorted(p.name for p in (home / "uptimeharbor").iterdir())
    assert worlds == ["demo-rollback", "demo-success"]
    for world in worlds:
        state = json.loads((home / "uptimeharbor" / world / "harbor" / "state.json").read_text())
        assert all(env.get("pid") is None for env in state["envs"].values())


def test_demo_graph_validates_with_the_packs_shapes(demo: tuple[Path, list[DemoStep]]) -> None:
    home, _ = demo
    args = [a for p in PILOTS for a in ("--pack", p)]
    done = cli("validate", "--all", *args, "--home", str(home))
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_decision_names_its_pack_version(demo: tuple[Path, list[DemoStep]]) -> None:
    home, _ = demo
    store = read_home_graph(home)
    decisions = {r[0].value
                 for r in store.query(CRADLE + "SELECT ?d WHERE { ?d a cradle:Decision }")}
    unnamed = list(store.query(CRADLE + "SELECT ?d WHERE { ?d a cradle:Decision "
                                        "FILTER NOT EXISTS { ?d cradle:packVersion ?v } }"))
    named = {(r[0].value, r[1].value) for r in store.query(
        CRADLE + "SELECT ?d ?v WHERE { ?d a cradle:Decision ; cradle:packVersion ?v }")}
    assert len(decisions) > 20 and unnamed == []
    expected = {f"{p}@{manifest_version(p)}" for p in (*PILOTS, "demo.ledger")}
    assert {v for _, v in named} == expected
    assert {d for d, _ in named} == decisions


def _shapes_checker() -> object:
    registry = PackRegistry.discover(None)
    files = [f for p in PILOTS for f in registry.get(p).shape_files()]
    return make_engine("rust", load_shapes(files))


def _drop(text: str, *needles: str) -> str:
    kept = [ln for ln in text.splitlines(keepends=True) if not all(n in ln for n in needles)]
    assert len(kept) < len(text.splitlines()), needles
    return "".join(kept)


def test_pack_shapes_catch_a_tampered_demo_graph(demo: tuple[Path, list[DemoStep]]) -> None:
    """The shapes are not vacuous: strip what they require and they report it."""
    home, _ = demo
    store = read_home_graph(home)
    text = store.nquads()
    checker = _shapes_checker()
    assert checker.validate(text, format="nquads").conforms  # type: ignore[attr-defined]
    no_approval = _drop(text, "cradle#authorizes>")
    report = checker.validate(no_approval, format="nquads")  # type: ignore[attr-defined]
    messages = {v.message for v in report.violations}
    assert any("production infra.deploy" in m for m in messages), messages
    assert any("customs.finalize_classification" in m for m in messages), messages


def test_the_pilots_approved_actions_are_high_risk(demo: tuple[Path, list[DemoStep]]) -> None:
    """Integrity rule 2 covers the production deploy and the restricted filing: flip
    every approval to rejected and both are reported (with the ledger's closure)."""
    home, _ = demo
    text = read_home_graph(home).nquads()
    a = "https://w3id.org/cradle#"
    flipped = text.replace(f"<{a}approvalStatus> <{a}Approved>",
                           f"<{a}approvalStatus> <{a}Rejected>")
    assert flipped != text
    broken = home.parent / "rejected.nq"
    broken.write_text(flipped, encoding="utf-8")
    done = cli("validate", str(broken), "--format", "json")
    assert done.returncode == 1, done.stdout
    rule2 = [v["focus_node"] for v in json.loads(done.stdout)["violations"] if v["rule"] == 2]
    store = read_home_graph(home)
    for tool in ("infra.deploy", "customs.finalize_classification"):
        approved = {r[0].value for r in store.query(
            CRADLE + "SELECT ?a WHERE { ?a cradle:executedAt ?t ; cradle:invokes ?tool ; "
                     "cradle:riskLevel cradle:HighRisk "
                     f'FILTER (STRENDS(STR(?tool), "/tool/{tool}")) }}')}
        assert approved and approved <= set(rule2), (tool, approved, rule2)
