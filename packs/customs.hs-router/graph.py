"""Projection of an outcome into RDF, in the pack vocabulary (``ontology/hs.ttl``).

The graph is a projection: rebuilt from the outcome JSON at any time, never the truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rdflib import RDF, XSD, Graph, Literal, Namespace, URIRef

PACK_DIR = Path(__file__).resolve().parent
CUSTOMS = Namespace("https://w3id.org/cradle/pack/customs#")
CRADLE = Namespace("https://w3id.org/cradle#")
BASE = "https://w3id.org/cradle/pack/customs/id/"
ONTOLOGY_TTL = PACK_DIR / "ontology" / "hs.ttl"
SHAPES_TTL = PACK_DIR / "shapes" / "hs-shapes.ttl"

ATTRIBUTE_PROPERTIES: dict[str, str] = {
    "product_type": "productType",
    "maximum_takeoff_weight": "maximumTakeoffWeight",
    "remote_controlled_only": "remoteControlledOnly",
    "passenger_carriage": "passengerCarriage",
    "unladen_weight": "unladenWeight",
    "part_of": "partOf",
    "maximum_range": "maximumRange",
    "endurance": "endurance",
    "beyond_visual_line_of_sight": "beyondVisualLineOfSight",
    "autonomous_flight": "autonomousFlight",
    "aerosol_capacity": "aerosolCapacity",
    "gust_tolerance": "gustTolerance",
}


def _iri(kind: str, key: str) -> URIRef:
    return URIRef(BASE + kind + "/" + quote(key, safe=""))


def _literal(value: Any) -> Literal:
    if isinstance(value, bool):
        return Literal(value, datatype=XSD.boolean)
    if isinstance(value, int | float):
        return Literal(float(value), datatype=XSD.decimal)
    return Literal(str(value))


def outcome_to_graph(outcome: Mapping[str, Any], graph: Graph | None = None) -> Graph:
    g = graph if graph is not None else Graph()
    g.bind("customs", CUSTOMS)
    g.bind("cradle", CRADLE)
    digest = str(outcome["decision_digest"]).removeprefix("sha256:")
    decision = _iri("decision", digest)
    product = _iri("product", digest)
    g.add((decision, RDF.type, CUSTOMS.ClassificationDecision))
    if outcome["status"] == "classified":
        g.add((decision, RDF.type, CUSTOMS.ClassifiedDecision))
    g.add((decision, CUSTOMS.status, Literal(outcome["status"])))
    g.add((decision, CUSTOMS.packVersion, Literal(outcome["pack"])))
    g.add(
        (
            decision,
            CUSTOMS.permittedToFinalize,
            Literal(bool(outcome["permitted_to_finalize"]), datatype=XSD.boolean),
        )
    )
    if outcome.get("evaluated_at"):
        g.add((decision, CUSTOMS.evaluatedAt, Literal(outcome["evaluated_at"], datatype=XSD.date)))
    if outcome.get("hs_code"):
        g.add((decision, CUSTOMS.hsCode, Literal(outcome["hs_code"])))
    for code in outcome.get("candidate_hs_codes") or []:
        g.add((decision, CUSTOMS.candidateHsCode, Literal(code)))
    for name in outcome.get("missing_facts") or []:
        g.add((decision, CUSTOMS.missingFact, Literal(name)))
    for permit in outcome.get("permits_required") or []:
        g.add((decision, CUSTOMS.permitRequired, Literal(permit)))
    g.add((decision, CUSTOMS.about, product))
    g.add((product, RDF.type, CUSTOMS.Product))
    for index, fact in enumerate(outcome.get("facts") or []):
        node = _iri("fact", f"{digest}-{index}")
        g.add((decision, CUSTOMS.hasFact, node))
        g.add((node, RDF.type, CUSTOMS.ProductAttributeFact))
        g.add((node, CUSTOMS.predicate, Literal(fact["predicate"])))
        g.add((node, RDF.value, _literal(fact["value"])))
        if fact.get("unit"):
            g.add((node, CUSTOMS.unit, Literal(fact["unit"])))
        for source in fact.get("sources") or []:
            g.add((node, CUSTOMS.factSource, Literal(source)))
        for ev in fact.get("evidence") or []:
            ev_node = _iri("evidence", ev["id"])
            g.add((node, CRADLE.hasEvidence, ev_node))
            g.add((ev_node, RDF.type, CRADLE.Evidence))
            g.add((ev_node, CUSTOMS.evidenceText, Literal(ev["text"])))
        prop = ATTRIBUTE_PROPERTIES.get(fact["predicate"])
        if prop:
            g.add((product, CUSTOMS[prop], _literal(fact["value"])))
    for source in outcome.get("legal_sources") or []:
        node = _iri("source", source["id"])
        g.add((decision, CUSTOMS.citesLegalSource, node))
        kind = CUSTOMS.LegalSource if source["binding"] else CUSTOMS.RoutingRule
        g.add((node, RDF.type, kind))
        g.add((node, CUSTOMS.sourceId, Literal(source["id"])))
        g.add((node, CUSTOMS.binding, Literal(bool(source["binding"]), datatype=XSD.boolean)))
        g.add((node, CUSTOMS.priority, Literal(int(source["priority"]), datatype=XSD.integer)))
        g.add((node, CUSTOMS.validFrom, Literal(source["valid_from"], datatype=XSD.date)))
        if source.get("valid_to"):
            g.add((node, CUSTOMS.validTo, Literal(source["valid_to"], datatype=XSD.date)))
    return g
