"""SHACL validation of the graph additions an outcome projects (``shapes/hs-shapes.ttl``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyshacl import validate
from rdflib import Graph

from ..graph import ONTOLOGY_TTL, SHAPES_TTL, outcome_to_graph


def validate_outcome_graph(outcome: Mapping[str, Any]) -> tuple[bool, str]:
    """``(conforms, report text)`` for the outcome's RDF projection against the pack shapes."""
    data = outcome_to_graph(outcome)
    shapes = Graph().parse(SHAPES_TTL, format="turtle")
    ontology = Graph().parse(ONTOLOGY_TTL, format="turtle")
    conforms, _report_graph, text = validate(
        data, shacl_graph=shapes, ont_graph=ontology, inference="none", advanced=True
    )
    return bool(conforms), str(text)
