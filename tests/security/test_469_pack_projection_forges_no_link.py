"""A pack's projection links to core objects; it cannot make one verified or approved.

Finding (the twenty-fourth review, the graph): a projector's triple may not have a core
object as its subject ("a pack links *to* core objects but never states anything *about*
one — a pack cannot forge a verification or an approval", README), but the integrity rules
read some core vocabulary *towards* a core object: rule 3 the verifications that
``cradle:checks`` a committed transition, rule 2 the approvals that ``cradle:authorizes``
an action's decision. A projector yielding, about a node of its own,
``a cradle:Verification ; cradle:verificationStatus cradle:Verified ; cradle:checks
<core transition>`` made rule 3 hold for a transition no verification checked (likewise
a forged ``Approved`` approval of a decision for rule 2), and ``why-allowed`` listed the
forged approval among the action's approvals.

Now a pack triple whose object is a core object (or a run graph) may not use a predicate
of the core vocabulary (``https://w3id.org/cradle#``): a pack links to core objects with
its own terms or PROV's (``prov:wasGeneratedBy``), as the shipped packs do. Such a
triple is a :class:`ProjectionError`: at commit it fails that commit, elsewhere the
event is marked ``cradle:projectionFailed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import pytest

from cradle_kg.errors import ProjectionError
from cradle_kg.graph.packproj import (
    PROJECTION_FAILED,
    PackProjector,
    Triple,
    core_node,
    iri,
    pack_triples,
    run_projector,
)
from cradle_kg.graph.shacl import RustShaclEngine, load_shapes
from cradle_kg.records import built_event
from cradle_kg.storage import GENESIS_HASH

C = "https://w3id.org/cradle#"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
OWN = iri("https://example.org/pack/id/check/1")
TRANSITION = core_node("transition", "st:1")
FORGED = {
    "verification": [(OWN, iri(TYPE), iri(C + "Verification")),
                     (OWN, iri(C + "verificationStatus"), iri(C + "Verified")),
                     (OWN, iri(C + "checks"), TRANSITION)],
    "approval": [(OWN, iri(TYPE), iri(C + "HumanApproval")),
                 (OWN, iri(C + "approvalStatus"), iri(C + "Approved")),
                 (OWN, iri(C + "authorizes"), core_node("decision", "dec:1"))],
}
EVENT = built_event(seq=7, id="evt-7", run_id="r", kind="action.observed", subject="act:1",
                    actor="runtime", at=datetime(2026, 1, 1, tzinfo=UTC), payload={},
                    payload_hash=GENESIS_HASH, prev_hash=GENESIS_HASH, hash=GENESIS_HASH)


def _projector(triples: list[Triple]) -> PackProjector:
    def body(ev: object) -> Iterable[Triple]:
        return triples
    return PackProjector(pack="acme.forge@1.0.0", name="checks",
                         kinds=frozenset({"action.observed"}), body=body)


@pytest.mark.parametrize("what", sorted(FORGED))
def test_a_projector_cannot_forge_a_link_into_a_core_object(what: str) -> None:
    projector = _projector(FORGED[what])
    try:
        produced = run_projector(projector, EVENT)
    except ProjectionError as exc:
        assert "core vocabulary" in exc.message, exc.message
    else:
        if what == "verification":  # before: rule 3 held for an unchecked transition
            data = (f"{TRANSITION} <{TYPE}> <{C}StateTransition> .\n"
                    f'{TRANSITION} <{C}committedAt> "2026-01-01T00:00:00Z"'
                    "^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n"
                    + "".join(t + " .\n" for t in produced))
            report = RustShaclEngine(load_shapes()).validate(data, format="nt")
            assert 3 in report.rules(), report.to_text()
        pytest.fail(f"the forged {what} was projected")
    # outside a commit, the event is marked and the rest goes in
    marked = pack_triples(EVENT, [projector])
    assert len(marked) == 1 and PROJECTION_FAILED in marked[0]


def test_links_the_shipped_packs_write_still_go_in() -> None:
    prov = "http://www.w3.org/ns/prov#"
    fine = [(OWN, iri(prov + "wasGeneratedBy"), core_node("action", "act:1")),
            (OWN, iri("https://example.org/pack#heldBy"), core_node("decision", "dec:1")),
            (OWN, iri(C + "verificationStatus"), iri(C + "Verified")),
            (OWN, iri(C + "hasEvidence"), iri("https://example.org/pack/id/evidence/1"))]
    assert len(run_projector(_projector(fine), EVENT)) == 4
