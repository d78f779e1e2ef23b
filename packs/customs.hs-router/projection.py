"""customs.hs-router's records in the run graph, through the SDK's projection hook.

Pure functions of one journal event (no clock, no I/O), in the pack vocabulary
(``ontology/hs.ttl``), checked by the pack's shapes at commit:

- ``action.observed`` of ``customs.classify`` → a ``customs:ClassificationDecision`` (the
  observed outcome): status, HS code, candidate codes, missing facts, permits, the goods
  line's attribute facts with their evidence, the legal sources it cited — linked to the
  HS 2022 and dual-use concepts of the pack's knowledge graph it relied on
  (``customs:usedConcept``) and to the core action that produced it;
- ``decision.made`` on ``customs.classify`` that gate 1 sent back with missing facts →
  a ``needs_clarification`` classification naming the missing facts and the candidates;
- ``action.observed`` of ``customs.finalize_classification`` → the filed declaration.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

from cradle_kg.packs.sdk import AuditEvent, Triple, core_node, iri, literal, projection

CUSTOMS = "https://w3id.org/cradle/pack/customs#"
CRADLE = "https://w3id.org/cradle#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDF_VALUE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#value"
PROV = "http://www.w3.org/ns/prov#"
XSD_DATE = "http://www.w3.org/2001/XMLSchema#date"
BASE = "https://w3id.org/cradle/pack/customs/id/"
#: the concept schemes the pack's knowledge graph holds (``knowledge.py``)
HS_CONCEPT = "https://w3id.org/cradle/pack/customs/hs2022/"
DUAL_USE_CONCEPT = "https://w3id.org/cradle/pack/customs/dual-use/"
VERDICT = {"classified": "Allow", "needs_clarification": "Clarify", "rejected": "Deny"}
TOOL_CLASSIFY = "customs.classify"
TOOL_FINALIZE = "customs.finalize_classification"
ATTRIBUTE_PROPERTIES: dict[str, str] = {
    "product_type": "productType", "maximum_takeoff_weight": "maximumTakeoffWeight",
    "remote_controlled_only": "remoteControlledOnly", "passenger_carriage": "passengerCarriage",
    "unladen_weight": "unladenWeight", "part_of": "partOf", "maximum_range": "maximumRange",
    "endurance": "endurance", "beyond_visual_line_of_sight": "beyondVisualLineOfSight",
    "autonomous_flight": "autonomousFlight", "aerosol_capacity": "aerosolCapacity",
    "gust_tolerance": "gustTolerance",
}


def cu(term: str) -> str:
    return iri(CUSTOMS + term)


def node(kind: str, key: str) -> str:
    return iri(BASE + kind + "/" + quote(key, safe=""))


def hs_concept(code: str) -> str:
    """``8806.22`` → the HS 2022 subheading concept (``…/hs2022/880622``)."""
    return iri(HS_CONCEPT + code.replace(".", ""))


def _value(value: Any) -> str:
    if isinstance(value, bool | str):
        return literal(value)
    if isinstance(value, int | float):
        return literal(float(value))
    return literal(str(value))


def _classification(s: str, out: Mapping[str, Any], action: str) -> Iterator[Triple]:
    """The triples of one classification outcome (the pack's ``models.Outcome`` as JSON)."""
    yield (s, iri(RDF_TYPE), cu("ClassificationDecision"))
    if out["status"] == "classified":
        yield (s, iri(RDF_TYPE), cu("ClassifiedDecision"))
    yield (s, cu("status"), literal(str(out["status"])))
    # a ClassificationDecision is a cradle:Decision (ontology): it carries a core verdict
    yield (s, iri(CRADLE + "verdict"), iri(CRADLE + VERDICT[str(out["status"])]))
    yield (s, cu("packVersion"), literal(str(out["pack"])))
    yield (s, cu("permittedToFinalize"), literal(bool(out["permitted_to_finalize"])))
    yield (s, iri(PROV + "wasGeneratedBy"), action)
    if out.get("evaluated_at"):
        yield (s, cu("evaluatedAt"), literal(str(out["evaluated_at"]), XSD_DATE))
    if out.get("hs_code"):
        yield (s, cu("hsCode"), literal(str(out["hs_code"])))
        yield (s, cu("usedConcept"), hs_concept(str(out["hs_code"])))
    for code in out.get("candidate_hs_codes") or ():
        yield (s, cu("candidateHsCode"), literal(str(code)))
        yield (s, cu("consideredConcept"), hs_concept(str(code)))
    for name in out.get("missing_facts") or ():
        yield (s, cu("missingFact"), literal(str(name)))
    for permit in out.get("permits_required") or ():
        yield (s, cu("permitRequired"), literal(str(permit)))
    for rule in out.get("rules") or ():
        entry = str(rule.get("rule", ""))
        if entry.startswith("EU-2021/821:") and rule.get("result") in ("true", "false"):
            # the dual-use entry was evaluated (held or not): the decision relied on it
            yield (s, cu("usedConcept"), iri(DUAL_USE_CONCEPT + entry.split(":", 1)[1]))
    yield from _facts(s, out)
    yield from _sources(s, out)


def _facts(s: str, out: Mapping[str, Any]) -> Iterator[Triple]:
    key = str(out["decision_digest"]).removeprefix("sha256:")
    product = node("product", key)
    yield (s, cu("about"), product)
    yield (product, iri(RDF_TYPE), cu("Product"))
    for index, fact in enumerate(out.get("facts") or ()):
        f = node("fact", f"{key}-{index}")
        yield (s, cu("hasFact"), f)
        yield (f, iri(RDF_TYPE), cu("ProductAttributeFact"))
        yield (f, cu("predicate"), literal(str(fact["predicate"])))
        yield (f, iri(RDF_VALUE), _value(fact["value"]))
        # the life cycle (issue 14): an extracted or derived fact is a candidate
        yield (f, iri(CRADLE + "verificationStatus"), iri(CRADLE + "Unverified"))
        if fact.get("unit"):
            yield (f, cu("unit"), literal(str(fact["unit"])))
        for source in fact.get("sources") or ():
            yield (f, cu("factSource"), literal(str(source)))
        for ev in fact.get("evidence") or ():
            e = node("evidence", str(ev["id"]))
            yield (f, iri(CRADLE + "hasEvidence"), e)
            yield (e, iri(RDF_TYPE), iri(CRADLE + "Evidence"))
            yield (e, cu("evidenceText"), literal(str(ev["text"])))
        prop = ATTRIBUTE_PROPERTIES.get(str(fact["predicate"]))
        if prop:
            yield (product, cu(prop), _value(fact["value"]))


def _sources(s: str, out: Mapping[str, Any]) -> Iterator[Triple]:
    for source in out.get("legal_sources") or ():
        src = node("source", str(source["id"]))
        yield (s, cu("citesLegalSource"), src)
        yield (src, iri(RDF_TYPE), cu("LegalSource" if source["binding"] else "RoutingRule"))
        yield (src, cu("sourceId"), literal(str(source["id"])))
        yield (src, cu("binding"), literal(bool(source["binding"])))
        yield (src, cu("priority"), literal(int(source["priority"])))
        yield (src, cu("validFrom"), literal(str(source["valid_from"]), XSD_DATE))
        if source.get("valid_to"):
            yield (src, cu("validTo"), literal(str(source["valid_to"]), XSD_DATE))


def _tool_of(ev: AuditEvent) -> str:
    if ev.kind == "action.observed":
        return str(ev.payload["observation"]["tool_id"])
    return str((ev.payload.get("action") or {}).get("action_type", ""))


@projection("customs.classifications", kinds=("action.observed",))
def classifications(ev: AuditEvent) -> Iterable[Triple]:
    obs = ev.payload["observation"]
    out = obs.get("output")
    if not isinstance(out, dict) or obs.get("error"):
        return
    action = core_node("action", str(obs["execution_id"]))
    if obs["tool_id"] == TOOL_CLASSIFY:
        yield from _classification(node("classification", str(obs["execution_id"])), out, action)
    elif obs["tool_id"] == TOOL_FINALIZE and out.get("declaration_id"):
        d = node("declaration", str(out["declaration_id"]))
        yield (d, iri(RDF_TYPE), cu("FiledDeclaration"))
        yield (d, cu("hsCode"), literal(str(out["hs_code"])))
        yield (d, cu("usedConcept"), hs_concept(str(out["hs_code"])))
        yield (d, iri(PROV + "wasGeneratedBy"), action)
        for permit in out.get("permits_required") or ():
            yield (d, cu("permitRequired"), literal(str(permit)))


@projection("customs.clarifications", kinds=("decision.made",))
def clarifications(ev: AuditEvent) -> Iterable[Triple]:
    """Gate 1 held a goods line at ``needs_clarification``: which facts, which candidates."""
    if _tool_of(ev) != TOOL_CLASSIFY:
        return
    decision = ev.payload["decision"]
    if decision["verdict"] != "clarify" or not decision.get("missing_facts"):
        return
    packs = [p for p in decision.get("pack_versions", ()) if p.startswith("customs.hs-router@")]
    if not packs:
        return
    s = node("clarification", str(decision["id"]))
    yield (s, iri(RDF_TYPE), cu("ClassificationDecision"))
    yield (s, cu("status"), literal("needs_clarification"))
    yield (s, iri(CRADLE + "verdict"), iri(CRADLE + "Clarify"))
    yield (s, cu("packVersion"), literal(packs[0]))
    yield (s, cu("permittedToFinalize"), literal(False))
    yield (s, cu("heldBy"), core_node("decision", str(decision["id"])))
    yield (s, cu("evaluatedAt"), literal(str(decision["decided_at"])[:10], XSD_DATE))
    for name in decision["missing_facts"]:
        yield (s, cu("missingFact"), literal(str(name)))
    for found in ev.payload.get("validator_findings", ()):
        for finding in found.get("findings", ()):
            for code in (finding.get("data") or {}).get("candidate_hs_codes") or ():
                yield (s, cu("candidateHsCode"), literal(str(code)))
                yield (s, cu("consideredConcept"), hs_concept(str(code)))
