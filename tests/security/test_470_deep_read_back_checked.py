"""A postcondition reads the whole read-back, or the check is inconclusive.

Finding (the twenty-fourth review, SHACL): gate 2 writes the verifier's observation (and
the action's arguments) as RDF for the contract's postcondition shapes, and stopped
without a word at the ninth nested object: what lay deeper was not written. A shape
"nowhere in the read-back is a line `rejected`" held — ``shapes: held``, the effect
committed — when the system acted on (an upstream's answer the verifier read back) put
its rejection ten objects deep; the same line three deep failed the check. The arguments
an agent writes may nest 29 objects deep (the input limits), so a shape comparing a deep
argument with the read-back read nothing there and held.

Now every object down to the input limits' ceiling (100 levels) is written, and a value
nested deeper than that — the work stays bounded — makes the postconditions
``inconclusive`` (not checked, not committed) instead of silently held.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime, VerifierReport, VerifyRequest
from cradle_kg.records import OutcomeStatus, VerificationCheck, VerificationStatus
from tests.conftest import make_config
from tests.test_gate2_world import _go, _tool

pytestmark = pytest.mark.usefixtures("journal_backend")

OB = "https://w3id.org/cradle/observed#"
NOTHING_REJECTED = f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
<https://example.org/t#NothingRejected> a sh:NodeShape ; sh:targetNode <urn:cradle:observed> ;
    sh:sparql [ sh:message "the read-back holds a rejected line" ;
        sh:select \"\"\"SELECT $this WHERE {{ $this (<urn:x:none>|!<urn:x:none>)* ?n .
            ?n <{OB}status> "rejected" }}\"\"\" ] .
"""
V = VerificationStatus


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"status": "rejected"}
    for _ in range(depth):
        value = {"line": value}
    return value


def _reading(depth: int):  # type: ignore[no-untyped-def]
    def verify(req: VerifyRequest) -> VerifierReport:
        return VerifierReport(
            checks=(VerificationCheck(name="resource_exists", status=V.VERIFIED),
                    VerificationCheck(name="expected_state", status=V.VERIFIED)),
            read_at=datetime.now(UTC), source="test",
            evidence={"stored": "x", "read": _nested(depth)})
    return verify


@pytest.mark.parametrize(("depth", "expected"), [
    (3, V.FAILED), (10, V.FAILED), (60, V.FAILED), (150, V.INCONCLUSIVE)])
def test_a_deep_rejection_is_read(home: Path, depth: int, expected: V) -> None:
    with Runtime(home, config=make_config()) as rt:
        _tool(rt, "test.deep", _reading(depth), postconditions=(NOTHING_REJECTED,))
        out = _go(rt, "p-deep", "test.deep")
        assert out.verification is not None
        check = next(c for c in out.verification.checks if c.name == "postconditions")
        # before: 10 and 60 deep, "shapes: held" and the effect committed
        assert check.status is expected, check
        assert out.status is not OutcomeStatus.EXECUTED
        assert out.transition is None or out.transition.committed_at is None
