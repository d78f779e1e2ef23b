"""Namespaces and built-in file locations of the execution vocabulary.

The IRIs are a public contract (design/VOCABULARY.md): user run graphs, shapes and
queries are written against them. Strings for code that builds text (N-Triples,
SPARQL); rdflib ``Namespace`` objects for code that builds rdflib terms.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from rdflib import Namespace

CRADLE_NS: Final = "https://w3id.org/cradle#"
PROV_NS: Final = "http://www.w3.org/ns/prov#"
XSD_NS: Final = "http://www.w3.org/2001/XMLSchema#"
SH_NS: Final = "http://www.w3.org/ns/shacl#"
RDF_NS: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS_NS: Final = "http://www.w3.org/2000/01/rdf-schema#"

#: rdflib namespaces, made on first use so that importing the vocabulary costs no rdflib
_NAMESPACES: Final = {"CRADLE": CRADLE_NS, "PROV": PROV_NS, "XSD": XSD_NS, "SH": SH_NS}
if TYPE_CHECKING:
    CRADLE: Namespace
    PROV: Namespace
    XSD: Namespace
    SH: Namespace


def __getattr__(name: str) -> Namespace:
    if name in _NAMESPACES:
        from rdflib import Namespace

        space = Namespace(_NAMESPACES[name])
        globals()[name] = space
        return space
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

ONTOLOGY_IRI: Final = "https://w3id.org/cradle"
ONTOLOGY_VERSION: Final = "0.1.0"
ONTOLOGY_VERSION_IRI: Final = f"{ONTOLOGY_IRI}/{ONTOLOGY_VERSION}"

# The package is installed editable and the ontology / shapes live at the repo root,
# beside the package rather than inside it, so packs and users can read them as files.
_REPO_ROOT: Final = Path(__file__).resolve().parents[2]
ONTOLOGY_DIR: Final = _REPO_ROOT / "ontology"
SHAPES_DIR: Final = _REPO_ROOT / "shapes"
ONTOLOGY_FILE: Final = ONTOLOGY_DIR / "cradle.ttl"
INTEGRITY_SHAPES_FILE: Final = SHAPES_DIR / "integrity.ttl"
STRUCTURE_SHAPES_FILE: Final = SHAPES_DIR / "structure.ttl"

#: the predicate that numbers an integrity shape (shapes/integrity.ttl)
RULE_NUMBER: Final = CRADLE_NS + "ruleNumber"

#: integrity shape IRI -> rule number, as declared in shapes/integrity.ttl
RULE_SHAPES: Final[dict[str, int]] = {f"{CRADLE_NS}Rule{n}Shape": n for n in range(1, 9)}

#: the classes of the contract (VOCABULARY.md), each a PROV Entity, Activity or Agent
CONTRACT_CLASSES: Final[tuple[str, ...]] = tuple(
    CRADLE_NS + name
    for name in (
        "Agent", "Task", "Intent", "Proposal", "Plan", "Action", "Tool", "Observation",
        "Fact", "Evidence", "Policy", "Permission", "Constraint", "Decision",
        "Verification", "StateTransition", "HumanApproval", "AuditEvent", "Resource",
        "ResourceState", "Context", "RuntimeEvent", "DomainPack", "TrustedSource",
    )
)  # fmt: skip

__all__ = [
    "CONTRACT_CLASSES",
    "CRADLE",
    "CRADLE_NS",
    "INTEGRITY_SHAPES_FILE",
    "ONTOLOGY_DIR",
    "ONTOLOGY_FILE",
    "ONTOLOGY_IRI",
    "ONTOLOGY_VERSION",
    "ONTOLOGY_VERSION_IRI",
    "PROV",
    "PROV_NS",
    "RDFS_NS",
    "RDF_NS",
    "RULE_NUMBER",
    "RULE_SHAPES",
    "SH",
    "SHAPES_DIR",
    "SH_NS",
    "STRUCTURE_SHAPES_FILE",
    "XSD",
    "XSD_NS",
]
