"""A tool for the integration tests, registered as a plugin of the test home: it needs
one piece of fresh evidence (so a call without it is ``needs_clarification``)."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from cradle_kg import Runtime, ToolCall, ToolSpec, VerifierReport, VerifyRequest
from cradle_kg.records import (
    IdempotencyClass,
    SideEffectClass,
    VerificationCheck,
    VerificationStatus,
)


class ReportIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    case: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9-]+$")


class ReportOut(BaseModel):
    filed: bool
    case: str


def _verified(req: VerifyRequest) -> VerifierReport:
    ok = VerificationStatus.VERIFIED
    return VerifierReport(checks=(VerificationCheck(name="resource_exists", status=ok),
                                  VerificationCheck(name="expected_state", status=ok)),
                          read_at=datetime.now(UTC), evidence={"read": "ok"}, source="test")


def register(runtime: Runtime) -> None:
    def file_report(call: ToolCall) -> ReportOut:
        assert isinstance(call.arguments, ReportIn)
        return ReportOut(filed=True, case=call.arguments.case)

    runtime.register_verifier("test.mcp.verified", _verified)
    runtime.register_tool(ToolSpec(
        id="test.mcp.file_report", version="1", input_model=ReportIn, output_model=ReportOut,
        side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
        verifier="test.mcp.verified", requires_evidence=1, target_from="test:{case}",
        blast_radius=("test:*",), description="file a report (needs one piece of evidence)"),
        file_report)
