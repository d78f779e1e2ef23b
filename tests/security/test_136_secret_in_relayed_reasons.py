"""A secret argument is not relayed in the reasons of a validator, a verifier or a check.

Finding (eighth attack review): since ``test_131`` a value a tool declares secret is masked
in the graph's values and quotes and in the reasons lineage gives — but the reasons the
runtime *relays* from other code were passed on as written: a pack's domain validator that
quotes the argument it refuses (``password `…` is too weak``), a verifier's check detail
(``mcp proxy``'s own: `` `key` is `…`, expected `<the argument>` ``), a verifier or an
invariant that raises, a gate-1 check that crashes (``check `domain_preconditions` failed:
ValueError: …``). Those texts are the decision's and the outcome's reasons — what the agent
is answered with (an injected agent reads back the password it was made to set), what the
journal's decision and transition hold, and the graph's ``cradle:reason`` (``/sparql``,
no token by default). Measured before the fix: the password in the agent's answer of a
refused call and of a call whose effect was not confirmed, in the journaled
``decision.made``/``run.outcome`` reasons and ``validator_findings``, and in the graph.

Now gate 1 and gate 2 write every reason, check detail and finding message they relay with
the proposal's secret values masked (``**********``); the journal still keeps the proposal
(and the verifier's raw report, which strict replay serves) as they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from cradle_kg.loop.gate1.findings import Finding
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import (
    IdempotencyClass,
    OutcomeStatus,
    SideEffectClass,
    Verdict,
    VerificationCheck,
    VerificationStatus,
)
from cradle_kg.redaction import MASK
from cradle_kg.tools import ToolSpec
from cradle_kg.verifiers import VerifierReport, VerifyRequest
from tests.lineage.kit import Free, lineage_runtime, submit, verified

WEAK = "Sommer-2026-Qx"
STRONG = "Kx7-Plover-Anvil-93"
RAISED = "Raised-Secret-5150"


class SetPassword(BaseModel):
    user: str
    new_password: SecretStr


class RotateKey(BaseModel):
    service: str
    api_key: str


def _validator(proposal: Any, spec: ToolSpec) -> list[Finding]:
    args = proposal.action.arguments
    if args.get("new_password") == WEAK:
        return [Finding(code="weak_password", verdict=Verdict.REPAIR,
                        message=f"password `{args['new_password']}` is too weak for "
                                f"{args['user']}")]
    if args.get("new_password") == RAISED:
        raise ValueError(f"cannot score {args['new_password']}")
    return []


def _verifier(req: VerifyRequest) -> VerifierReport:
    # what `mcp proxy`'s declared read says when the upstream answers another value
    expected = req.action.arguments["api_key"]
    return VerifierReport(checks=(
        VerificationCheck(name="resource_exists", status=VerificationStatus.VERIFIED),
        VerificationCheck(name="expected_state", status=VerificationStatus.FAILED,
                          detail=f"`key` is `old`, expected `{expected}`")),
        read_at=datetime.now(UTC), evidence={"read": {"key": "old"}})


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    runtime = lineage_runtime(tmp_path / "home")
    common: dict[str, Any] = dict(version="1", output_model=Free,
                                  side_effect_class=SideEffectClass.REVERSIBLE,
                                  idempotency=IdempotencyClass.NATURAL, target_from="account:*")
    runtime.register_tool(ToolSpec(id="set_password", input_model=SetPassword,
                                   verifier="ok", **common),
                          lambda call: Free(result="ok"))
    runtime.register_tool(ToolSpec(id="rotate_key", input_model=RotateKey,
                                   secret_arguments=("api_key",), verifier="read_key",
                                   **common),
                          lambda call: Free(result="ok"))
    runtime.register_validator("set_password", _validator, name="password_strength")
    runtime.register_verifier("read_key", _verifier)
    runtime.register_verifier("ok", verified(lambda: {"ok": True}))
    runtime.record_input("run:t", "Please rotate the billing key and reset alice's "
                         "password.", author="user:emma")
    try:
        yield runtime
    finally:
        runtime.close()


def _relayed(rt: Runtime, secret: str) -> list[str]:
    """Where the run's journal holds ``secret`` outside the records that keep it: an
    action's arguments (the proposal as sent), the trace's value (the graph masks it) and
    the verifier's raw report (strict replay serves it)."""
    def paths(value: Any, at: str) -> Iterator[str]:
        if isinstance(value, dict):
            for k, v in value.items():
                yield from paths(v, f"{at}/{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                yield from paths(v, f"{at}[{i}]")
        elif isinstance(value, str) and secret in value:
            yield at
    kept = ("/arguments/", "/verifier_report/", "/trace/arguments[")
    return [f"{ev.kind} {p}" for ev in rt.journal.events(run_id="run:t")
            for p in paths(ev.payload, "") if not any(k in p for k in kept)]


def test_a_validators_reason_never_relays_the_secret(rt: Runtime) -> None:
    out = submit(rt, 0, "set_password", {"user": "alice", "new_password": WEAK},
                 target="account:alice")
    assert out.status is OutcomeStatus.REPAIR
    said = " ".join(out.reasons)
    assert "is too weak for alice" in said and MASK in said  # the reason, its key kept
    assert WEAK not in said
    decided = [e for e in rt.journal.events(run_id="run:t") if e.kind == "decision.made"]
    assert MASK in str(decided[0].payload["validator_findings"])
    assert _relayed(rt, WEAK) == []  # the decision's reasons and checks, the findings
    # the record: the proposal as sent
    assert decided[0].payload["action"]["arguments"]["new_password"] == WEAK


def test_a_crashing_check_never_relays_the_secret(rt: Runtime) -> None:
    out = submit(rt, 0, "set_password", {"user": "alice", "new_password": RAISED},
                 target="account:alice")
    assert out.status is OutcomeStatus.DENIED
    said = " ".join(out.reasons)
    assert "cannot score" in said and RAISED not in said


def test_a_verifiers_detail_never_relays_the_secret(rt: Runtime) -> None:
    out = submit(rt, 0, "rotate_key", {"service": "billing", "api_key": "sk-live-7781-qq"},
                 target="account:billing")
    assert out.status is OutcomeStatus.VERIFICATION_FAILED
    said = " ".join(out.reasons)
    assert "expected `" + MASK + "`" in said and "sk-live-7781-qq" not in said
    assert out.transition is not None and "sk-live-7781-qq" not in str(out.transition.reason)
    assert _relayed(rt, "sk-live-7781-qq") == []
    store = rt.graph()
    if store is not None:
        text = "\n".join(str(r["o"].value) for r in store.query(
            "SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }"))
        assert "sk-live-7781-qq" not in text


def test_a_strong_password_still_runs(rt: Runtime) -> None:
    out = submit(rt, 0, "set_password", {"user": "alice", "new_password": STRONG},
                 target="account:alice")
    assert out.status is OutcomeStatus.EXECUTED
