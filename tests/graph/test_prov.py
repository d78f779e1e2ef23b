"""A run graph is a PROV graph: any PROV reader sees entities, activities and agents."""

from __future__ import annotations

from pathlib import Path

from rdflib import Graph

from cradle_kg.graph.rdfio import read_rdf
from cradle_kg.graph.vocab import CONTRACT_CLASSES, ONTOLOGY_FILE

FIXTURES = Path(__file__).parent / "fixtures"
PREFIXES = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX cradle: <https://w3id.org/cradle#>
"""


def _exported_run() -> Graph:
    run = Graph()
    for name in ("rule2_pos.ttl", "rule3_pos.ttl", "rule4_pos.ttl", "rule5_pos.ttl"):
        for s, p, o, _ in read_rdf(FIXTURES / name).quads((None, None, None, None)):
            run.add((s, p, o))
    # round-trip through Turtle: what a user would export and hand to a PROV tool
    return Graph().parse(data=run.serialize(format="turtle"), format="turtle")


def test_every_cradle_instance_is_a_prov_entity_activity_or_agent() -> None:
    run = _exported_run()
    merged = run + Graph().parse(ONTOLOGY_FILE)
    contract = " ".join(f"<{c}>" for c in CONTRACT_CLASSES)
    typed = merged.query(
        PREFIXES + f"SELECT DISTINCT ?x WHERE {{ VALUES ?c {{ {contract} }} ?x a ?c }}"
    )
    instances = {row[0] for row in typed}  # type: ignore[index]
    assert len(instances) >= 10
    provd = merged.query(
        PREFIXES
        + f"""SELECT DISTINCT ?x WHERE {{
            VALUES ?c {{ {contract} }}
            VALUES ?top {{ prov:Entity prov:Activity prov:Agent }}
            ?x a ?c . ?c rdfs:subClassOf* ?top .
        }}"""
    )
    assert {row[0] for row in provd} == instances  # type: ignore[index]


def test_prov_association_is_readable_through_subproperties() -> None:
    merged = _exported_run() + Graph().parse(ONTOLOGY_FILE)
    rows = merged.query(
        PREFIXES
        + """SELECT ?activity ?agent WHERE {
            ?p rdfs:subPropertyOf* prov:wasAssociatedWith .
            ?activity ?p ?agent .
            ?activity a/rdfs:subClassOf* prov:Activity .
        }"""
    )
    pairs = {(str(a), str(b)) for a, b in rows}  # type: ignore[misc]
    assert ("https://example.org/action", "https://example.org/bot") in pairs
