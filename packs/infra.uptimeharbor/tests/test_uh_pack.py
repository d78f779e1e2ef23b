"""The pack as a pack: manifest entries resolve, ontology and shapes parse and work."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pyshacl
import rdflib
import yaml
from rdflib.namespace import OWL, RDF, RDFS

from cradle_kg.packs import sdk

PKG = "cradle_pack_infra_uptimeharbor"
PACK = Path(__file__).resolve().parent.parent
CRADLE = rdflib.Namespace("https://w3id.org/cradle#")
INFRA = rdflib.Namespace("https://w3id.org/cradle/pack/infra#")


def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((PACK / "manifest.yaml").read_text())
    return data


def _resolve(ref: str) -> Any:
    module, attr = ref.split(":")
    return getattr(importlib.import_module(f"{PKG}.{module}"), attr)


def test_manifest_keys_and_files() -> None:
    m = _manifest()
    assert m["id"] == "infra.uptimeharbor" and m["version"] == "1.0.0"
    assert m["core_ontology"] == ">=0.1.0"
    for key in ("name", "entities", "ontology", "shapes", "policies", "cedar_schema",
                "validators", "tools", "verifiers", "examples"):
        assert m[key], key
    files = [m["ontology"], m["cedar_schema"], *m["shapes"], *m["policies"], *m["examples"]]
    for rel in files:
        assert (PACK / rel).is_file(), rel
    listed = {Path(e).name for e in m["examples"]}
    assert listed == {p.name for p in (PACK / "examples").glob("*.json")}
    pack = importlib.import_module(PKG)
    assert m["id"] == pack.PACK_ID and m["version"] == pack.PACK_VERSION


def test_manifest_references_resolve_to_declarations() -> None:
    m = _manifest()
    kinds = {"validators": sdk.Validator, "tools": sdk.Tool, "verifiers": sdk.Verifier}
    for key, kind in kinds.items():
        for ref in m[key]:
            assert isinstance(_resolve(ref), kind), ref
    assert callable(_resolve(m["hooks"]["scenario"]))
    # the plain operations' contracts and the governed tools agree on what each may do
    contracts = _resolve(m["hooks"]["tool_contracts"])
    governed = {t.spec.id: t.spec for t in (_resolve(ref) for ref in m["tools"])}
    for tool_id, contract in contracts.items():
        if tool_id == "infra.lookup":  # the deploy's lookup, not a tool of its own
            assert governed["infra.deploy"].idempotency == "keyed"
            continue
        assert str(governed[tool_id].side_effect_class) == contract["side_effect_class"]


def test_ontology_declares_entities_under_core_terms() -> None:
    g = rdflib.Graph().parse(PACK / _manifest()["ontology"])
    for name in _manifest()["entities"]:
        assert (INFRA[name], RDF.type, OWL.Class) in g, name
    parents = {
        "Service": CRADLE.Resource, "Environment": CRADLE.Resource,
        "Incident": CRADLE.Resource, "Probe": CRADLE.Resource,
        "Commit": CRADLE.ResourceState, "Deployment": CRADLE.ResourceState,
        "ProbeResult": CRADLE.Observation, "TestRun": CRADLE.Observation,
        "Fix": CRADLE.Proposal, "IncidentVerification": CRADLE.Verification,
    }
    for name, parent in parents.items():
        assert (INFRA[name], RDFS.subClassOf, parent) in g, name
    core = PACK.parent.parent / "ontology" / "cradle.ttl"
    if core.exists():  # the core vocabulary, when present, defines every parent we use
        cg = rdflib.Graph().parse(core)
        for parent in set(parents.values()):
            assert (parent, RDF.type, OWL.Class) in cg, parent


DATA = """
@prefix infra: <https://w3id.org/cradle/pack/infra#> .
@prefix cradle: <https://w3id.org/cradle#> .
infra:stg a infra:Environment ; infra:tier infra:staging .
infra:prd a infra:Environment ; infra:tier infra:production .
infra:c1 a infra:Commit ; infra:sha "%(sha)s" .
infra:p1 a infra:ProbeResult ; infra:probesPath "/health" ; infra:statusCode 500 .
infra:v1 a infra:IncidentVerification ; infra:verificationStatus "verified" ;
    infra:verifiedCommit infra:c1 ; infra:verifiedIn infra:stg ; infra:verifiesIncident infra:i1 .
infra:i1 a infra:Incident ; infra:incidentStatus "%(status)s" ; infra:failingProbe infra:p1 ;
    %(resolved)s infra:activeFix infra:f1 %(extra_fix)s .
infra:f1 a infra:Fix . infra:f2 a infra:Fix .
infra:d1 a infra:Deployment ; infra:inEnvironment infra:prd ; infra:runsCommit infra:c1
    %(staging)s .
"""


def _validate(**over: str) -> tuple[bool, str]:
    params = {"sha": "a" * 40, "status": "resolved", "resolved": "infra:resolvedBy infra:v1 ;",
              "extra_fix": "", "staging": "; infra:stagingVerification infra:v1"}
    params.update(over)
    data = rdflib.Graph().parse(data=DATA % params, format="turtle")
    shapes = rdflib.Graph().parse(PACK / _manifest()["shapes"][0])
    conforms, _, text = pyshacl.validate(data, shacl_graph=shapes, advanced=True)
    return bool(conforms), str(text)


def test_shapes_accept_a_well_formed_run() -> None:
    conforms, text = _validate()
    assert conforms, text


def test_shapes_refuse_each_broken_rule() -> None:
    broken = {
        "production deployment without a verified staging": {"staging": ""},
        "at most one fix in flight": {"extra_fix": ", infra:f2"},
        "resolved incident without a verified": {"resolved": ""},
        "full 40-hex sha": {"sha": "HEAD"},
    }
    for message, over in broken.items():
        conforms, text = _validate(**over)
        assert not conforms and message in text, (message, text)
