"""Masking a secret leaves the record whole: strict replay and ``audit verify`` still hold.

The events carrying a secret's action name its secret arguments (``secret_arguments``),
and a lineage trace's quotes mask the secrets proposed in the run (``test_131``): both are
computed at gate 1 from the tool's contract and the run's journal, so a strict replay —
which runs each proposal again in a scratch home and compares every event, hash for hash
— writes the same events, and ``audit verify`` re-hashes the proposal as it was sent. This
test fails on the code before the fix only in what it checks of the masking (the trace's
quote and the events' marks); replay and the chain held before and must hold after.
"""

from __future__ import annotations

from pathlib import Path

from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import OutcomeStatus
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli
from tests.lineage.kit import pack_home

AGENT = "agent:admin"
SECRET = "Corr3ct-Horse-88"

MANIFEST = """id: test.secret
name: A tool with a secret argument
version: 1.0.0
core_ontology: ">=0.1.0"
description: A password change whose new password is a SecretStr.
tools:
  - tools:set_password
verifiers:
  - tools:verified
"""

TOOLS = '''from pydantic import BaseModel, ConfigDict, SecretStr

from cradle_kg.packs.sdk import (IdempotencyClass, PackContext, SideEffectClass, ToolCall,
                                 VerifierReport, VerifyRequest, read_back, report, tool,
                                 verifier)


class SetIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str
    new_password: SecretStr


class SetOut(BaseModel):
    done: bool


@verifier("test.secret.verified")
def verified(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    return report(read_back(True, True), read_at=ctx.clock(), evidence={"read": "ok"},
                  source="test")


@tool("set_password", version="1", input_model=SetIn, output_model=SetOut,
      side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
      verifier="test.secret.verified", target_from="account:{user}", output_trust="trusted",
      sensitive_arguments=("new_password",), choice_words=("set",))
def set_password(ctx: PackContext, call: ToolCall) -> SetOut:
    return SetOut(done=bool(call.arguments.new_password.get_secret_value()))
'''


def _home(tmp_path: Path) -> Path:
    return pack_home(tmp_path / "home", "secretpack", manifest=MANIFEST, tools=TOOLS, config={
        "agents": [{"id": AGENT}], "permissions": [{"subject": AGENT}],
        "packs": ["test.secret"]})


def test_strict_replay_and_the_chain_hold_for_a_masked_secret(tmp_path: Path) -> None:
    home = _home(tmp_path)
    with Runtime(home, graph_sync=False) as rt:
        rt.record_input("run:p", f"Please set the password of alice to {SECRET} now.",
                        author="user:emma")
        for n, user in enumerate(("alice", "alice")):  # the second: answered from the record
            out = rt.submit({"id": "p0", "task_id": "p", "agent_id": AGENT, "run_id": "run:p",
                             "step": 0, "action": {
                                 "action_type": "set_password", "target": f"account:{user}",
                                 "arguments": {"user": user, "new_password": SECRET}}})
            assert out.status is OutcomeStatus.EXECUTED, (n, out.reasons)
        events = list(rt.journal.events(run_id="run:p"))
    traced = next(e for e in events if e.kind == "lineage.traced")
    assert traced.payload["secret_arguments"] == ["new_password"]
    quotes = [o["quote"] for a in traced.payload["trace"]["arguments"] for o in a["origins"]]
    assert quotes and all(SECRET.lower() not in q.lower() for q in quotes)
    assert any("**********" in q for q in quotes)
    # the record holds what was sent, and replays to the same events, hash for hash
    received = next(e for e in events if e.kind == "proposal.received")
    assert received.payload["proposal"]["action"]["arguments"]["new_password"] == SECRET
    assert strict_replay(home, ["run:p"]).runs == ["run:p"]
    verify = run_cli("audit", "verify", "--home", str(home))
    assert verify.returncode == 0, verify.stdout + verify.stderr
