"""The OWL check's child: owlready2 and HermiT over one N-Triples file.

``python -P -m cradle_kg.graph.hermit FILE JAVA`` loads ``FILE`` into a fresh owlready2
``World``, runs HermiT with ``JAVA`` and prints ``{"report": …}`` (an
:class:`~cradle_kg.graph.owl.OntologyReport`) or ``{"error": "…"}`` on stdout.
:func:`cradle_kg.graph.owl.check_ontology` runs it in a session of its own, so that the
check's time limit can end it and the Java process owlready2 starts, which owlready2
itself waits for with no timeout (``tests/security/test_358``). The file it is given has
had what owlready2 acts on taken out (``owl:imports``, its own annotations).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import owlready2

from cradle_kg.errors import OntologyError
from cradle_kg.graph.owl import OntologyReport

_OWL_THING = "http://www.w3.org/2002/07/owl#Thing"
_OWL_NOTHING = "http://www.w3.org/2002/07/owl#Nothing"


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


def main(argv: list[str]) -> int:
    try:
        report = _reason(Path(argv[1]), argv[2])
    except OntologyError as exc:
        sys.stdout.write(json.dumps({"error": exc.message}))
        return 1
    sys.stdout.write(json.dumps({"report": report.model_dump(mode="json")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
