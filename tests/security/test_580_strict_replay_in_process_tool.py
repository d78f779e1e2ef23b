"""Strict replay says a run's tool is not installed, not that the journal diverges.

Finding (the twenty-sixth review, the README walked as an auditor): on a home where
``cradle-kg mcp proxy`` had served an upstream's tools (``examples/proxy.md``), ``cradle-kg
replay --strict`` ended in ``strict replay of `run:…/mcp-…` diverges at seq 259
(`decision.made`): `payload.action_id` differs from the recorded event`` — what it says of
a tampered journal — while ``audit verify`` (and ``--semantics``) found it intact. The
replay's scratch home holds the home's packs; a tool a process registered itself (the
proxy's upstream tools, a host's ``Runtime.register_tool``) is not there, so gate 1 decided
the call again as an unknown tool and the record "differed". The auditor was told the
journal was not the one that ran.

Now strict replay refuses such a run before replaying it, as it refuses a pack version not
installed (``test_554``): one line naming the run, the tool and version its decisions
recorded, and that no installed pack provides it (a tool registered in process: ``mcp
proxy``, a host's ``register_tool``) — exit 1, no word of a divergence. A demo home, a
tool registered in process beside its pack's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from cradle_kg import (
    IdempotencyClass,
    Runtime,
    SideEffectClass,
    ToolSpec,
    VerificationCheck,
    VerificationStatus,
    VerifierReport,
    VerifyRequest,
)
from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.records import OutcomeStatus, Proposal
from cradle_kg.workflow.replay import strict_replay
from tests.packs.conftest import cli

pytestmark = pytest.mark.usefixtures("journal_backend")


class Memo(BaseModel):
    account: str
    text: str


class Noted(BaseModel):
    ok: bool


def _verified(req: VerifyRequest) -> VerifierReport:
    ok = VerificationStatus.VERIFIED
    return VerifierReport(checks=(VerificationCheck(name="resource_exists", status=ok),
                                  VerificationCheck(name="expected_state", status=ok)),
                          read_at=req.executed_at, evidence={"read": "memo"}, source="memo")


def test_a_run_of_an_in_process_tool_is_refused_by_name(home: Path) -> None:
    with Runtime(home, graph_sync=False) as rt:
        rt.register_verifier("host.memo-read", _verified)
        rt.register_tool(ToolSpec(id="demo.ledger.memo", version="7.0.0", input_model=Memo,
                                  output_model=Noted,
                                  side_effect_class=SideEffectClass.REVERSIBLE,
                                  idempotency=IdempotencyClass.NATURAL,
                                  verifier="host.memo-read", target_from="ledger:{account}"),
                         lambda call: Noted(ok=True))
        out = rt.submit(Proposal.model_validate({
            "id": "p-memo", "task_id": "t-memo", "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.memo", "target": "ledger:acct-1",
                       "arguments": {"account": "acct-1", "text": "called the customer"}}}))
    assert out.status is OutcomeStatus.EXECUTED, out.reasons

    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(home, [out.run_id])
    message = caught.value.message
    # before: "strict replay of `run:t-memo` diverges at seq 5 (`decision.made`): ..."
    assert "diverges" not in message, message
    assert "`demo.ledger.memo@7.0.0`" in message and "no installed pack" in message, message

    done = cli("replay", out.run_id, "--strict", "--home", str(home))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "no installed pack" in done.stderr, done.stderr
