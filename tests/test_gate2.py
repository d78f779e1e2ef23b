"""Gate 2: what really happened decides, not what the tool said."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cradle_kg import OutcomeStatus, Runtime, VerificationStatus
from cradle_kg.demo.scenario import ledger_entries

from .conftest import proposal

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


V = VerificationStatus


def _check(outcome: object, name: str) -> VerificationStatus:
    ver = outcome.verification  # type: ignore[attr-defined]
    return next(c.status for c in ver.checks if c.name == name)  # type: ignore[no-any-return]


def test_lying_tool_is_a_failure_although_it_said_ok(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "demo.ledger.credit_unreliable", {"account": "a", "amount": 3}))
    assert out.observation is not None and out.observation.reported_ok is True
    assert out.status is OutcomeStatus.VERIFICATION_FAILED
    assert out.verification is not None and out.verification.status is V.FAILED
    assert _check(out, "resource_exists") is V.FAILED
    assert out.transition is not None and out.transition.committed_at is None
    assert out.transition.aborted_at is not None
    assert ledger_entries(rt.home.root) == {}


def test_verified_action_commits_with_all_nine_checks(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 3}))
    assert out.verification is not None
    names = [c.name for c in out.verification.checks]
    assert names == ["output_schema", "resource_exists", "expected_state", "postconditions",
                     "domain_invariants", "no_forbidden_side_effect", "freshness",
                     "evidence_completeness", "compensation_available"]
    assert out.transition is not None and out.transition.committed_at is not None
    assert out.verification.evidence_refs


def test_tool_that_raises_is_failed_and_not_committed(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "test.raising", {}, agent="agent:tester", target="test:1"))
    assert out.status is OutcomeStatus.FAILED
    assert out.observation is not None and "the tool broke" in (out.observation.error or "")
    assert out.transition is not None and out.transition.committed_at is None


def test_output_that_breaks_the_contract(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "test.bad_output", {}, agent="agent:tester", target="test:1"))
    assert out.status is OutcomeStatus.FAILED
    assert _check(out, "output_schema") is V.FAILED


def test_verifier_that_raises_is_inconclusive_and_never_commits(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "test.verifier_raises", {}, agent="agent:tester",
                             target="test:1"))
    assert out.status is OutcomeStatus.INCONCLUSIVE
    assert out.transition is not None and out.transition.committed_at is None
    assert any("verifier exploded" in c.detail for c in out.verification.checks)  # type: ignore[union-attr]


def test_side_effect_outside_the_blast_radius(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "test.wide", {}, agent="agent:tester", target="test:1"))
    assert out.status is OutcomeStatus.VERIFICATION_FAILED
    assert _check(out, "no_forbidden_side_effect") is V.FAILED


def test_stale_verifying_read_is_inconclusive(rt: Runtime) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    rt.gate2.max_read_age = timedelta(seconds=1)
    rt.clock = lambda: later  # the verifier read "now", the runtime thinks it is an hour later
    out = rt.submit(proposal("p", "test.raising", {}, agent="agent:tester", target="test:1"))
    assert out.status is OutcomeStatus.FAILED  # raising tool
    out = rt.submit(proposal("p2", "demo.ledger.credit", {"account": "a", "amount": 1}))
    assert _check(out, "freshness") is V.INCONCLUSIVE
    assert out.status is OutcomeStatus.INCONCLUSIVE


def test_domain_invariant(rt: Runtime) -> None:
    rt.register_invariant("demo.ledger.credit", lambda a, o: ["balance must stay even"],
                          name="even")
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 1}))
    assert out.status is OutcomeStatus.VERIFICATION_FAILED
    assert _check(out, "domain_invariants") is V.FAILED


def test_integrity_hook_aborts_the_commit(rt: Runtime) -> None:
    rt.commit_hooks.append(lambda run, events: ["rule 3 violated (test)"])
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 1}))
    assert out.status is OutcomeStatus.FAILED
    assert out.transition is not None and out.transition.committed_at is None
    assert "integrity check failed" in (out.transition.reason or "")
