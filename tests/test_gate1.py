"""Gate 1: every one of the eleven checks, each made to fail on purpose."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime, Verdict
from cradle_kg.config import Limit
from cradle_kg.errors import PolicyError
from cradle_kg.loop.gate1.checks import CHECK_NAMES
from cradle_kg.loop.gate1.findings import Finding
from cradle_kg.records import CheckStatus

from .conftest import make_config, proposal, register_test_tools

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")



def _failed_check(outcome: object) -> str:
    decision = outcome.decision  # type: ignore[attr-defined]
    failed = [c for c in decision.checks if c.status is CheckStatus.FAIL]
    assert len(failed) == 1
    return str(failed[0].check)


def test_allowed_proposal_passes_all_eleven_checks_in_order(rt: Runtime) -> None:
    out = rt.submit(proposal("p1", "demo.ledger.credit", {"account": "a1", "amount": 5}))
    assert out.status is OutcomeStatus.EXECUTED
    assert out.decision is not None
    assert [c.check for c in out.decision.checks] == list(CHECK_NAMES)
    assert out.decision.policy_version.startswith("sha256:")
    assert [p.policy_id for p in out.decision.policy_results] == ["demo-ledger-agents"]
    assert out.decision.granted_to == "agent:ledger-assistant"


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        ("no.such.tool", {}, "unknown_tool"),
        ("demo.ledger.credit", {"account": "a1"}, "invalid_arguments"),
        ("demo.ledger.credit", {"account": "a1", "amount": "lots"}, "invalid_arguments"),
        ("demo.ledger.credit", {"account": "a1", "amount": 5, "extra": 1}, "invalid_arguments"),
        # every string within the input limit (64 KiB), the whole over the tool's 64 KiB
        ("demo.ledger.credit", {"account": "a1", "amount": 5, "memo": "b" * 40_000,
                                "note": "c" * 40_000}, "arguments_too_large"),
    ],
)
def test_structure(rt: Runtime, tool: str, args: dict[str, object], code: str) -> None:
    out = rt.submit(proposal("p", tool, args))
    assert out.status is OutcomeStatus.DENIED
    assert out.decision is not None and out.decision.reason_codes == (code,)
    assert _failed_check(out) == "structure"


def test_invalid_arguments_name_the_field(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a1", "amount": "x"}))
    assert "`amount`" in out.reasons[0]


def test_identity_unknown(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 1},
                             agent="agent:nobody"))
    assert out.decision is not None and out.decision.reason_codes == ("unknown_identity",)
    assert _failed_check(out) == "identity"


def test_identity_wrong_principal(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 1},
                             on_behalf_of="user:mallory"))
    assert out.decision is not None and out.decision.reason_codes == ("wrong_principal",)


def test_permission_no_grant_and_missing_scope(rt: Runtime) -> None:
    # agent:tester holds permissions for test.* on test:* only
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 1},
                             agent="agent:tester"))
    assert out.decision is not None and out.decision.reason_codes == ("not_permitted",)
    assert _failed_check(out) == "permission"
    home = rt.home.root
    cfg = make_config()
    agent = cfg.agents[0].model_copy(update={"permitted_scopes": ("ledger:read",)})
    with Runtime(home, config=cfg.model_copy(update={"agents": (agent, *cfg.agents[1:])})) as r2:
        out = r2.submit(proposal("p2", "demo.ledger.credit", {"account": "a", "amount": 1}))
    assert out.decision is not None and out.decision.reason_codes == ("missing_scope",)


def test_policies_forbid_and_default_deny(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 5000}))
    assert out.status is OutcomeStatus.DENIED
    assert out.decision is not None
    assert out.decision.reason_codes == ("forbidden_by_policy",)
    assert [p.policy_id for p in out.decision.policy_results] == ["demo-credit-limit"]
    assert "human operator" in out.reasons[0]
    # staging is in the agent's scope nowhere: no policy permits it -> default deny
    cfg = make_config()
    agent = cfg.agents[0].model_copy(update={"environments": ("local", "staging")})
    with Runtime(rt.home.root, config=cfg.model_copy(update={"agents": (agent,
                                                                        *cfg.agents[1:])})) as r2:
        out = r2.submit(proposal("p2", "demo.ledger.credit", {"account": "a", "amount": 5},
                                 action={"environment": "staging"}))
    assert out.decision is not None and out.decision.reason_codes == ("no_permit",)


def test_policy_that_errors_fails_closed(home: Path) -> None:
    (home / "policies" / "broken.cedar").write_text(
        '@id("needs-missing-attr")\n'
        'permit(principal, action, resource) when { context.nonexistent == 1 };\n')
    with Runtime(home, config=make_config()) as r:
        out = r.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 5}))
    assert out.status is OutcomeStatus.DENIED
    assert out.decision is not None and out.decision.reason_codes == ("policy_error",)
    assert "fail closed" in out.reasons[0]


def test_policy_that_does_not_parse_is_a_typed_error(home: Path) -> None:
    (home / "policies" / "bad.cedar").write_text("permit(principal, action")
    with pytest.raises(PolicyError, match=r"bad\.cedar"):
        Runtime(home, config=make_config())


def test_domain_precondition(rt: Runtime) -> None:
    def needs_memo(p: object, spec: object) -> list[Finding]:
        return [Finding(code="memo_missing", message="a credit needs a memo fact",
                        verdict=Verdict.CLARIFY, missing_facts=("memo",))]

    rt.register_validator("demo.ledger.credit", needs_memo, name="memo")
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 5}))
    assert out.status is OutcomeStatus.NEEDS_CLARIFICATION
    assert out.decision is not None and out.decision.missing_facts == ("memo",)
    assert _failed_check(out) == "domain_preconditions"


def test_evidence_required_present_and_fresh(rt: Runtime) -> None:
    base = proposal("p", "test.evidence", {}, agent="agent:tester", target="test:1")
    out = rt.submit(base)
    assert out.status is OutcomeStatus.NEEDS_CLARIFICATION
    assert out.decision is not None and out.decision.missing_facts == ("evidence",)
    unknown = "sha256:" + "ab" * 32
    out = rt.submit({**base, "id": "p2", "evidence_refs": [unknown]})
    assert "not in the evidence store" in " ".join(out.reasons)
    ref = rt.add_evidence(b"ticket 42 says so", kind="ticket", collector="user:alice")
    out = rt.submit({**base, "id": "p3", "evidence_refs": [ref]})
    assert out.status is OutcomeStatus.EXECUTED


def test_stale_evidence_is_refused(home: Path) -> None:
    past = datetime.now(UTC) - timedelta(days=30)
    with Runtime(home, config=make_config(), clock=lambda: past) as old:
        ref = old.add_evidence(b"old", kind="ticket", collector="x")
    with Runtime(home, config=make_config()) as r:
        register_test_tools(r)
        out = r.submit(proposal("p", "test.evidence", {}, agent="agent:tester",
                                target="test:1", evidence_refs=[ref]))
    assert out.status is OutcomeStatus.NEEDS_CLARIFICATION
    assert "older than the freshness limit" in " ".join(out.reasons)


def test_approval_required_for_irreversible(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "demo.ledger.close_account", {"account": "a"}))
    assert out.status is OutcomeStatus.AWAITING_APPROVAL
    assert out.decision is not None
    assert out.decision.verdict is Verdict.REQUIRE_APPROVAL
    assert out.decision.required_actions == ("human_approval",)
    assert out.approval is not None and out.approval.scope == "account_closure"


def test_risk_high_in_production_needs_approval(home: Path) -> None:
    (home / "policies" / "prod.cedar").write_text(
        '@id("prod")\npermit(principal, action, resource) when '
        '{ context.environment == "production" };\n')
    cfg = make_config()
    agent = cfg.agents[0].model_copy(update={"environments": ("local", "production")})
    with Runtime(home, config=cfg.model_copy(update={"agents": (agent, *cfg.agents[1:])})) as r:
        out = r.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 5},
                                action={"environment": "production"}))
    assert out.status is OutcomeStatus.AWAITING_APPROVAL


def test_rate_limit(home: Path) -> None:
    cfg = make_config(limits=(Limit(scope="agent", window_seconds=3600, max_calls=2),
                              Limit(scope="tenant", window_seconds=3600, max_calls=100)))
    with Runtime(home, config=cfg) as r:
        for i in range(2):
            ok = r.submit(proposal(f"p{i}", "demo.ledger.credit", {"account": "a", "amount": 1}))
            assert ok.status is OutcomeStatus.EXECUTED
        out = r.submit(proposal("p3", "demo.ledger.credit", {"account": "a", "amount": 1}))
    assert out.status is OutcomeStatus.DENIED
    assert out.decision is not None and out.decision.reason_codes == ("rate_limit_agent",)
    assert _failed_check(out) == "cost_and_rate"


def test_cost_limit(home: Path) -> None:
    cfg = make_config(limits=(Limit(scope="task", window_seconds=3600, max_cost=1.5),))
    with Runtime(home, config=cfg) as r:
        first = r.submit(proposal("p1", "demo.ledger.credit", {"account": "a", "amount": 1},
                                  task_id="t"))
        second = r.submit(proposal("p2", "demo.ledger.credit", {"account": "a", "amount": 2},
                                   task_id="t"))
    assert first.status is OutcomeStatus.EXECUTED
    assert second.decision is not None and second.decision.reason_codes == ("cost_limit_task",)


def test_environment(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 1},
                             action={"environment": "mars"}))
    assert out.decision is not None
    # no policy permits "mars" -> stopped earlier by policy; check the environment check alone
    assert out.status is OutcomeStatus.DENIED
    out = rt.submit(proposal("p2", "test.raising", {}, agent="agent:tester", target="test:1",
                             action={"environment": "production"}))
    assert out.decision is not None
    assert out.decision.reason_codes == ("environment_out_of_scope",)
    assert _failed_check(out) == "environment"


def test_unknown_environment(rt: Runtime) -> None:
    out = rt.submit(proposal("p2", "test.raising", {}, agent="agent:tester", target="test:1",
                             action={"environment": "mars"}))
    assert out.decision is not None and out.decision.reason_codes == ("unknown_environment",)


def test_idempotency_replay_and_conflict(rt: Runtime) -> None:
    first = proposal("p", "demo.ledger.credit", {"account": "a", "amount": 7})
    one = rt.submit(first)
    two = rt.submit(first)
    assert one.status is two.status is OutcomeStatus.EXECUTED
    assert two.replayed and not one.replayed
    assert one.action is not None and two.action is not None
    assert one.action.idempotency_key == two.action.idempotency_key
    from cradle_kg.demo.scenario import ledger_entries

    assert list(ledger_entries(rt.home.root).values()) == [1]
    pinned = proposal("q", "demo.ledger.credit", {"account": "a", "amount": 8},
                      action={"idempotency_key": one.action.idempotency_key})
    out = rt.submit(pinned)  # a derived key is the runtime's: an agent cannot choose it
    assert out.decision is not None
    assert out.decision.reason_codes == ("idempotency_key_reserved",)
    chosen = proposal("q1", "demo.ledger.credit", {"account": "a", "amount": 8},
                      action={"idempotency_key": "k"})
    assert rt.submit(chosen).status is OutcomeStatus.EXECUTED
    other = proposal("q2", "demo.ledger.credit", {"account": "a", "amount": 9},
                     action={"idempotency_key": "k"})
    out = rt.submit(other)
    assert out.decision is not None and out.decision.reason_codes == ("idempotency_conflict",)
    assert _failed_check(out) == "idempotency"


def test_denied_checks_after_the_failure_are_not_evaluated(rt: Runtime) -> None:
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 5000}))
    assert out.decision is not None
    statuses = {c.check: c.status for c in out.decision.checks}
    assert statuses["policies"] is CheckStatus.FAIL
    assert statuses["idempotency"] is CheckStatus.NOT_EVALUATED
