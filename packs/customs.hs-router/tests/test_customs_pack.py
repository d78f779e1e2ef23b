"""Manifest, Cedar policies, SPARQL queries, validators and verifiers of the pack."""

from __future__ import annotations

import importlib
import json
from datetime import date
from pathlib import Path
from typing import Any

import cedarpy
import pytest
import yaml
from customs_hs_router.graph import outcome_to_graph
from customs_hs_router.tools.hs import classify_goods_line
from customs_hs_router.validators.goods_line import validate_goods_line
from customs_hs_router.validators.outcome_graph import validate_outcome_graph
from customs_hs_router.verifiers.hs import (
    hs_code_exists,
    legal_source_current,
    required_permit_resolution,
)
from rdflib import OWL, RDF, Graph

from cradle_kg.packs import sdk

PACK = Path(__file__).resolve().parent.parent
EXAMPLES = PACK / "examples"


def _example(prefix: str) -> dict[str, Any]:
    (path,) = EXAMPLES.glob(f"{prefix}*.json")
    return classify_goods_line(json.loads(path.read_text(encoding="utf-8"))["input"])


def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((PACK / "manifest.yaml").read_text(encoding="utf-8"))
    return data


# --- manifest -----------------------------------------------------------------------------


def test_manifest_names_existing_files_and_callables() -> None:
    m = _manifest()
    assert m["id"] == "customs.hs-router" and m["version"] == "1.0.0"
    assert m["core_ontology"] == ">=0.1.0"
    for key in ("ontology", "shapes", "policies"):
        for rel in m[key]:
            assert (PACK / rel).is_file(), rel
    assert (PACK / m["cedar_schema"]).is_file() and (PACK / m["examples"]).is_dir()
    for rel in m["queries"].values():
        assert (PACK / rel).is_file()
    kinds = {"validators": sdk.Validator, "tools": sdk.Tool, "verifiers": sdk.Verifier}
    for key, kind in kinds.items():
        for ref in m[key]:
            module, attr = ref.split(":")
            found = getattr(importlib.import_module(f"customs_hs_router.{module}"), attr)
            assert isinstance(found, kind), ref


def test_manifest_entities_are_classes_of_the_ontology() -> None:
    g = Graph().parse(PACK / "ontology" / "hs.ttl")
    classes = {str(s) for s in g.subjects(RDF.type, OWL.Class)}
    for iri in _manifest()["entities"]:
        assert iri in classes and iri.startswith("https://w3id.org/cradle/pack/customs#")


# --- Cedar --------------------------------------------------------------------------------


def _policies() -> str:
    return (PACK / "policies" / "customs.cedar").read_text(encoding="utf-8")


def _schema() -> str:
    return (PACK / "policies" / "customs.cedarschema").read_text(encoding="utf-8")


def test_policies_validate_against_the_schema() -> None:
    result = cedarpy.validate_policies(_policies(), _schema())
    assert result.validation_passed, result.errors


def test_a_broken_policy_fails_validation() -> None:
    bad = (
        _policies()
        + '\npermit (principal, action == Action::"customs.finalize_classification", resource)'
        " when { context.no_such_field };"
    )
    assert not cedarpy.validate_policies(bad, _schema()).validation_passed


def _annotations() -> dict[str, dict[str, str]]:
    raw = json.loads(cedarpy.policies_to_json_str(_policies()))["staticPolicies"]
    return {pid: body.get("annotations", {}) for pid, body in raw.items()}


def _ask(tool: str, arguments: dict[str, Any], *, role: str = "customs-broker",
         side_effect_class: str = "read_only") -> tuple[bool, list[str]]:
    """A request in the core's shape (what gate 1 sends), checked against the schema."""
    request = {
        "principal": {"type": "Agent", "id": "agent:broker"},
        "action": {"type": "Action", "id": tool},
        "resource": {"type": "Resource", "id": "declaration:line-1"},
        "context": {
            "tool": tool, "side_effect_class": side_effect_class, "environment": "local",
            "declared_risk": "low", "tenant": "default", "task_id": "t", "on_behalf_of": "",
            "role": role, "dry_run": False, "evidence_count": 0, "arguments": arguments,
        },
    }
    entities = [{"uid": {"type": "Agent", "id": "agent:broker"},
                 "attrs": {"role": role, "tenant": "default"}, "parents": []}]
    result = cedarpy.is_authorized(request, _policies(), entities, schema=_schema())
    assert not result.diagnostics.errors, result.diagnostics.errors
    notes = _annotations()
    return result.allowed, sorted(notes[p]["id"] for p in result.diagnostics.reasons)


def _finalize(outcome: dict[str, Any]) -> tuple[bool, list[str]]:
    arguments = {
        "declaration_id": "line-1",
        "status": outcome["status"],
        "permitted_to_finalize": outcome["permitted_to_finalize"],
        "permits_required_count": len(outcome["permits_required"]),
        "missing_facts_count": len(outcome["missing_facts"]),
        "decision_digest": outcome["decision_digest"],
    }
    return _ask("customs.finalize_classification", arguments,
                side_effect_class="external_write")


def test_finalize_is_forbidden_for_the_paper_example() -> None:
    allowed, reasons = _finalize(_example("01_"))
    assert not allowed and reasons == ["missing-attribute-escalation"]


def test_finalize_without_permit_is_allowed() -> None:
    assert _finalize(_example("03_")) == (True, ["finalize-without-permit"])


def test_finalize_with_permit_requires_approval() -> None:
    allowed, reasons = _finalize(_example("09_"))
    assert allowed and reasons == ["restricted-goods-routing"]
    approval = {a["id"]: a.get("requires_approval") for a in _annotations().values()}
    assert approval["restricted-goods-routing"] == "true"
    assert approval["finalize-without-permit"] is None


def test_broker_may_invoke_read_only_tools_but_not_unknown_ones() -> None:
    assert _ask("customs.hs_lookup", {"code": "8806.22"})[0]
    assert _ask("customs.classify", {"description": "drone"})[0]
    assert not _ask("customs.classify", {"description": "drone"}, role="intern")[0]


# --- queries ------------------------------------------------------------------------------


def test_permits_by_hs_code_query() -> None:
    g = Graph()
    for prefix in ("09_", "10_", "12_", "01_", "03_"):
        outcome_to_graph(_example(prefix), g)
    query = (PACK / "queries" / "permits-by-hs-code.rq").read_text(encoding="utf-8")
    rows = [(str(r[0]), str(r[1]), int(str(r[2]))) for r in g.query(query)]  # type: ignore[index]
    assert rows == [
        ("8806.23", "EU-2021/821:9A112", 1),
        ("8806.93", "EU-2021/821:9A012", 1),
        ("8806.94", "EU-2021/821:9A112", 1),
    ]


def test_missing_facts_query() -> None:
    g = outcome_to_graph(_example("01_"))
    query = (PACK / "queries" / "missing-facts.rq").read_text(encoding="utf-8")
    assert sorted(str(r[1]) for r in g.query(query)) == ["maximum_range", "maximum_takeoff_weight"]  # type: ignore[index]


# --- validators ---------------------------------------------------------------------------


def test_goods_line_validator() -> None:
    assert validate_goods_line({"description": "drone", "facts": []}) == []
    assert validate_goods_line({"description": ""})
    problems = validate_goods_line(
        {
            "description": "drone",
            "facts": [
                {"predicate": "maximum_range", "value": 3, "unit": "parsec", "source": "doc:x"}
            ],
        }
    )
    assert problems and "facts.0" in problems[0]


def test_shapes_catch_a_tampered_outcome() -> None:
    outcome = _example("01_")
    outcome["permitted_to_finalize"] = True
    conforms, report = validate_outcome_graph(outcome)
    assert not conforms and "permitted to finalize" in report
    outcome = _example("03_")
    outcome["hs_code"] = "880622"
    assert not validate_outcome_graph(outcome)[0]
    outcome = _example("03_")
    outcome["legal_sources"] = [s for s in outcome["legal_sources"] if not s["binding"]]
    assert not validate_outcome_graph(outcome)[0]


# --- verifiers ----------------------------------------------------------------------------


def test_hs_code_exists_verifier() -> None:
    outcome = _example("03_")
    assert hs_code_exists(outcome)[0] == "verified"
    assert hs_code_exists(_example("01_"))[0] == "inconclusive"
    assert (
        hs_code_exists({**outcome, "hs_code": "8806.20", "candidate_hs_codes": []})[0] == "failed"
    )
    assert hs_code_exists({**outcome, "hs_code": "8806", "candidate_hs_codes": []})[0] == "failed"
    assert hs_code_exists({**outcome, "candidate_hs_codes": ["8806.30"]})[0] == "failed"


def test_legal_source_current_verifier() -> None:
    outcome = _example("09_")
    assert legal_source_current(outcome, date(2025, 12, 1))[0] == "verified"
    status, detail = legal_source_current(outcome, date(2025, 1, 1))
    assert status == "failed" and "EU-2021/821:AnnexI@2025-11" in detail
    forged = {**outcome, "legal_sources": [{"id": "EU-2099/1:AnnexI"}]}
    assert legal_source_current(forged, date(2025, 12, 1))[0] == "failed"
    assert legal_source_current({"legal_sources": []}, date(2025, 12, 1))[0] == "inconclusive"


@pytest.mark.parametrize("prefix", ["09_", "10_", "12_", "14_", "03_", "07_"])
def test_required_permit_resolution_verifies_examples(prefix: str) -> None:
    assert required_permit_resolution(_example(prefix))[0] == "verified"


def test_required_permit_resolution_catches_tampering() -> None:
    outcome = _example("09_")
    assert required_permit_resolution({**outcome, "permits_required": []})[0] == "failed"
    outcome = _example("03_")
    assert (
        required_permit_resolution({**outcome, "permits_required": ["EU-2021/821:9A012"]})[0]
        == "failed"
    )
    assert (
        required_permit_resolution({**outcome, "permits_required": ["EU-2021/821:9A999"]})[0]
        == "failed"
    )
    facts = [f for f in outcome["facts"] if f["predicate"] != "maximum_range"]
    assert required_permit_resolution({**outcome, "facts": facts})[0] == "inconclusive"
    assert required_permit_resolution(_example("01_"))[0] == "inconclusive"
    assert required_permit_resolution(_example("23_"))[0] == "inconclusive"
