"""OWL consistency and classification of the vocabulary, with HermiT.

OWL is kept for what it is good at here: is the curated vocabulary (our ontology plus
the packs' ontologies) consistent, are its classes satisfiable, what does it classify
under what. Business rules are SHACL's job, not this module's.

Measured facts this module is built around:
- owlready2 does not read Turtle, so files are merged with rdflib and handed over as
  N-Triples in a temporary file;
- HermiT runs on Java 17; owlready2's bundled Pellet does not, so it is not offered;
- an inconsistent ontology may surface as ``OwlReadyInconsistentOntologyError`` with an
  empty message, so the report words it itself;
- each check uses a fresh owlready2 ``World`` so that checks never leak into each other;
- owlready2's ``Ontology.load`` downloads every ``owl:imports`` (``urlopen``, no time
  limit, ``file:`` IRIs included) and *imports the Python module* an ontology names with
  its ``python_module`` annotation: the files checked are often a pack not trusted yet
  (``pack validate``), so those triples, and every other of owlready2's own namespace,
  are taken out before owlready2 reads the merge — the check covers the files given, and
  says which imports it did not follow (``tests/security/test_347``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import owlready2
from pydantic import BaseModel, ConfigDict
from rdflib import OWL, Graph, URIRef

from cradle_kg.errors import JavaMissingError, OntologyError, RdfParseError
from cradle_kg.graph.rdfio import read_union
from cradle_kg.graph.vocab import ONTOLOGY_FILE

__all__ = ["OntologyReport", "check_ontology"]

_OWL_THING = "http://www.w3.org/2002/07/owl#Thing"
_OWL_NOTHING = "http://www.w3.org/2002/07/owl#Nothing"
#: the namespace of owlready2's own annotations (``python_module``, ``python_name``, …)
_OWLREADY = "http://www.lesfleursdunormal.fr/static/_downloads/owlready_ontology.owl#"


class OntologyReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    consistent: bool
    unsatisfiable: list[str]
    # (class, direct named superclass) after classification, sorted
    hierarchy: list[tuple[str, str]]
    messages: list[str]
    #: the ``owl:imports`` of the files, not followed (nothing is fetched), sorted
    skipped_imports: list[str] = []


def check_ontology(paths: Sequence[Path] | None = None) -> OntologyReport:
    """Check the union of ``paths`` (default: the built-in ontology) with HermiT."""
    files = list(paths) if paths else [ONTOLOGY_FILE]
    java = shutil.which("java")
    if java is None:
        raise JavaMissingError(
            "the OWL reasoner (HermiT) needs Java and `java` is not on PATH",
            hint="install a Java runtime (17 works) and make `java` available on PATH",
        )
    merged = _merge(files)
    skipped = _inert(merged)
    with tempfile.TemporaryDirectory(prefix="cradle-owl-") as tmp:
        nt_file = Path(tmp) / "ontology.nt"
        merged.serialize(destination=str(nt_file), format="nt", encoding="utf-8")
        report = _reason(nt_file, java)
    return report.model_copy(update={"skipped_imports": skipped})


def _inert(graph: Graph) -> list[str]:
    """Take out of ``graph`` what owlready2 would act on — each ``owl:imports`` (fetched)
    and each triple of owlready2's namespace (``python_module``: imported) — and give the
    imports' IRIs."""
    imports = sorted({str(o) for o in graph.objects(None, OWL.imports)})
    graph.remove((None, OWL.imports, None))
    for triple in [t for t in graph if any(isinstance(term, URIRef)
                                           and str(term).startswith(_OWLREADY)
                                           for term in t)]:
        graph.remove(triple)
    return imports


def _merge(files: Sequence[Path]) -> Graph:
    try:
        return read_union(files)
    except RdfParseError as exc:
        raise OntologyError(f"cannot read ontology: {exc.message}", hint=exc.hint) from exc


def _reason(nt_file: Path, java: str) -> OntologyReport:
    world = owlready2.World()
    try:
        world.get_ontology(nt_file.as_uri()).load()
    except Exception as exc:  # owlready2 parse errors have no common base class
        raise OntologyError(f"owlready2 cannot load the ontology: {exc}") from exc
    # owlready2 reads the Java executable from a module global; point it at the one
    # found, so a PATH change is honoured the same way the check above saw it
    owlready2.JAVA_EXE = java
    try:
        owlready2.sync_reasoner_hermit(world, infer_property_values=False, debug=0)
    except owlready2.OwlReadyInconsistentOntologyError as exc:
        detail = str(exc).strip()
        message = "the ontology is inconsistent: no model satisfies its axioms"
        if detail:
            message += f": {detail}"
        message += " (e.g. an individual typed with two disjoint classes)"
        return OntologyReport(consistent=False, unsatisfiable=[], hierarchy=[], messages=[message])
    except owlready2.OwlReadyJavaError as exc:
        raise OntologyError(f"HermiT failed: {_first_line(str(exc))}") from exc
    return _classified(world)


def _classified(world: Any) -> OntologyReport:
    unsatisfiable = sorted(
        c.iri for c in world.inconsistent_classes() if c.iri != _OWL_NOTHING
    )
    hierarchy: set[tuple[str, str]] = set()
    for cls in world.classes():
        for sup in cls.is_a:
            iri = getattr(sup, "iri", None)  # skip restrictions and class expressions
            if isinstance(iri, str) and iri != _OWL_THING:
                hierarchy.add((cls.iri, iri))
    messages = [f"unsatisfiable class `{iri}`" for iri in unsatisfiable]
    return OntologyReport(
        consistent=True,
        unsatisfiable=unsatisfiable,
        hierarchy=sorted(hierarchy),
        messages=messages or ["consistent: every class is satisfiable"],
    )


def _first_line(text: str) -> str:
    """The Java exception's own message, without the stack trace."""
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip() and not ln.strip().startswith("at ")
             and not ln.strip().startswith("Java error message is")]
    for index, line in enumerate(lines):
        if "Exception" in line:
            message = line.split("Exception:", 1)[-1].strip()
            follow = " ".join(lines[index + 1:index + 4])
            return f"{message} {follow}".strip()
    return lines[0] if lines else "no message"
