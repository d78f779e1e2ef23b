"""A verifier's read the journal holds is not refused as one it cannot hold.

Finding (review of the twenty-fourth round's gate 2 change, test_471): a verifier's report
is now checked with the strict loader's rules before it is journaled, but those rules are
the ones of a JSON *document* (an agent's proposal), stricter than what the journal's
canonical JSON writes: a dict keyed by numbers (an HTTP status histogram
``{200: 41, 404: 1}``, rows by id) or a set (the tags a read found) — journaled before,
``{"200": 41, "404": 1}`` and a sorted list — made the ``verifier`` check inconclusive
("object keys must be strings", "a value of type `set` has no JSON form"): an effect that
ran and read back as expected was not committed and went to a person, for a report the
round before verified.

Now the report is checked as the journal encodes it (``check_value(..., encoded=True)``):
sets as lists, number keys as their text; what the journal still cannot hold (keys of
mixed kinds it cannot sort, a lone surrogate, ``NaN``) stays inconclusive, and what it
never could (a ``Decimal``) too, as test_471 made it.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus, VerificationStatus
from tests.conftest import make_config
from tests.test_gate2_world import _go, _ok, _tool

pytestmark = pytest.mark.usefixtures("journal_backend")


def _run(home: Path, extra: dict[str, Any]) -> Any:
    with Runtime(home, config=make_config()) as rt:
        inner = _ok()

        def verify(req: Any) -> Any:
            got = inner(req)
            got.evidence.update(extra)
            return got

        _tool(rt, "test.read", verify)
        out = _go(rt, "p-read", "test.read")
        assert out.verification is not None
        stored = [e for e in rt.journal.events() if e.kind == "verification.recorded"]
        return out, stored


@pytest.mark.parametrize("extra", [
    {"codes": {200: 41, 404: 1}},
    {"tags": {"prod", "eu"}},
    {"by_id": {7: {"seen": frozenset({1, 2})}, 1.5: True}},
])
def test_a_read_the_journal_holds_verifies(home: Path, extra: dict[str, Any]) -> None:
    out, stored = _run(home, extra)
    # before: inconclusive, "its report holds what the journal refuses: ... object keys
    # must be strings" / "a value of type `set` has no JSON form"
    assert out.verification.status is VerificationStatus.VERIFIED, [
        c.detail for c in out.verification.checks]
    assert out.status is OutcomeStatus.EXECUTED
    assert len(stored) == 1


@pytest.mark.parametrize("extra", [
    {"keys": {1: "a", "1": "b"}},  # the journal's encoder cannot sort them: it raised
    {"amount": Decimal("12.50")},
    {"tags": {"caf\udce9"}},
    {"nan": {float("nan"): 1}},
])
def test_a_read_the_journal_cannot_hold_stays_inconclusive(
        home: Path, extra: dict[str, Any]) -> None:
    out, stored = _run(home, extra)
    assert out.status is not OutcomeStatus.EXECUTED
    check = next(c for c in out.verification.checks if c.name == "verifier")
    assert check.status is VerificationStatus.INCONCLUSIVE
    assert "refuses" in check.detail, check.detail
    assert len(stored) == 1
