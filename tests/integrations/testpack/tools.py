"""A tool for the integration tests, loaded as the pack ``test.mcp`` of the test home: it
needs one piece of fresh evidence (so a call without it is ``needs_clarification``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from cradle_kg.packs.sdk import (
    IdempotencyClass,
    PackContext,
    SideEffectClass,
    ToolCall,
    VerifierReport,
    VerifyRequest,
    read_back,
    report,
    tool,
    verifier,
)


class ReportIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    case: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9-]+$")


class ReportOut(BaseModel):
    filed: bool
    case: str


@verifier("test.mcp.verified")
def verified(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    return report(read_back(True, True), read_at=ctx.clock(), evidence={"read": "ok"},
                  source="test")


@tool("test.mcp.file_report", version="1", input_model=ReportIn, output_model=ReportOut,
      side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
      verifier="test.mcp.verified", requires_evidence=1, target_from="test:{case}",
      blast_radius=("test:*",), description="file a report (needs one piece of evidence)")
def file_report(ctx: PackContext, call: ToolCall) -> ReportOut:
    assert isinstance(call.arguments, ReportIn)
    return ReportOut(filed=True, case=call.arguments.case)
