"""The ontology: its contract terms, and HermiT's verdict on it."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import OWL, RDF, RDFS, Graph, Literal, URIRef
from rdflib.namespace import SKOS

from cradle_kg.errors import JavaMissingError
from cradle_kg.graph.owl import check_ontology
from cradle_kg.graph.vocab import (
    CONTRACT_CLASSES,
    CRADLE,
    ONTOLOGY_FILE,
    ONTOLOGY_IRI,
    ONTOLOGY_VERSION_IRI,
    PROV,
)

PROV_TOPS = {PROV.Entity, PROV.Activity, PROV.Agent}


@pytest.fixture(scope="module")
def onto() -> Graph:
    return Graph().parse(ONTOLOGY_FILE)


def test_ontology_header(onto: Graph) -> None:
    header = URIRef(ONTOLOGY_IRI)
    assert (header, RDF.type, OWL.Ontology) in onto
    assert (header, OWL.versionIRI, URIRef(ONTOLOGY_VERSION_IRI)) in onto
    assert (header, OWL.versionInfo, Literal("0.1.0")) in onto


def test_every_contract_class_is_documented_under_one_prov_class(onto: Graph) -> None:
    for iri in map(URIRef, CONTRACT_CLASSES):
        assert (iri, RDF.type, OWL.Class) in onto, iri
        assert onto.value(iri, RDFS.label) is not None, iri
        assert onto.value(iri, SKOS.definition) is not None, iri
        assert len(set(onto.objects(iri, RDFS.subClassOf)) & PROV_TOPS) == 1, iri


CONTRACT_PROPERTIES = [
    "proposes",
    "contains",
    "targets",
    "invokes",
    "requires",
    "isGovernedBy",
    "evaluates",
    "produces",
    "supports",
    "isSupportedBy",
    "checks",
    "changes",
    "authorizes",
    "records",
    "verdict",
    "authorizedBy",
    "executedAt",
    "executedBy",
    "grantedTo",
    "riskLevel",
    "sideEffectClass",
    "approvalStatus",
    "approver",
    "expiresAt",
    "committedAt",
    "verificationStatus",
    "idempotencyKey",
    "source",
    "policyVersion",
    "packVersion",
    "decidedAt",
    "inputHash",
    "outputHash",
    "contentHash",
]


@pytest.mark.parametrize("name", CONTRACT_PROPERTIES)
def test_contract_properties_have_a_domain(onto: Graph, name: str) -> None:
    prop = CRADLE[name]
    kinds = set(onto.objects(prop, RDF.type))
    assert kinds & {OWL.ObjectProperty, OWL.DatatypeProperty}, name
    assert onto.value(prop, RDFS.domain) is not None, name
    assert onto.value(prop, SKOS.definition) is not None, name


@pytest.mark.parametrize(
    ("value_class", "members"),
    [
        ("Verdict", "Allow Deny Repair Clarify RequireApproval"),
        ("RiskLevel", "LowRisk MediumRisk HighRisk"),
        ("SideEffectClass", "ReadOnly Reversible Compensable ExternalWrite Irreversible"),
        ("ApprovalStatus", "Approved Rejected ChangesRequested Pending Expired"),
        ("VerificationStatus", "Verified Failed Inconclusive Unverified"),
    ],
)
def test_value_individuals_are_typed(onto: Graph, value_class: str, members: str) -> None:
    for name in members.split():
        assert (CRADLE[name], RDF.type, CRADLE[value_class]) in onto


def test_observation_and_fact_are_disjoint(onto: Graph) -> None:
    assert (CRADLE.Observation, OWL.disjointWith, CRADLE.Fact) in onto
    assert (PROV.Entity, OWL.disjointWith, PROV.Activity) in onto


def test_ontology_is_consistent() -> None:
    report = check_ontology()
    assert report.consistent is True
    assert report.unsatisfiable == []
    assert (f"{CRADLE}Action", f"{PROV}Activity") in report.hierarchy
    assert (f"{CRADLE}Decision", f"{PROV}Entity") in report.hierarchy


def _extra(tmp_path: Path, turtle: str) -> Path:
    path = tmp_path / "extra.ttl"
    path.write_text(f"@prefix cradle: <{CRADLE}> .\n{turtle}", encoding="utf-8")
    return path


def test_individual_both_observation_and_fact_is_inconsistent(tmp_path: Path) -> None:
    extra = _extra(tmp_path, "<https://example.org/x> a cradle:Observation , cradle:Fact .\n")
    report = check_ontology([ONTOLOGY_FILE, extra])
    assert report.consistent is False
    assert "inconsistent" in report.messages[0]


def test_action_typed_as_entity_via_prov_breaks_disjointness(tmp_path: Path) -> None:
    # a Decision (an Entity) used as the subject of executedBy (domain Action, an
    # Activity): the PROV disjointness we declared catches the category error
    extra = _extra(
        tmp_path,
        "<https://example.org/d> a cradle:Decision ; "
        "cradle:executedBy <https://example.org/bot> .\n",
    )
    assert check_ontology([ONTOLOGY_FILE, extra]).consistent is False


def test_unsatisfiable_class_is_listed(tmp_path: Path) -> None:
    extra = _extra(
        tmp_path,
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        "<https://example.org/Chimera> a <http://www.w3.org/2002/07/owl#Class> ;\n"
        "    rdfs:subClassOf cradle:Observation , cradle:Fact .\n",
    )
    report = check_ontology([ONTOLOGY_FILE, extra])
    assert report.consistent is True
    assert report.unsatisfiable == ["https://example.org/Chimera"]


def test_missing_java_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no java anywhere
    with pytest.raises(JavaMissingError) as info:
        check_ontology()
    assert "`java` is not on PATH" in info.value.message
    assert "Exception" not in info.value.message and "\tat " not in info.value.message
