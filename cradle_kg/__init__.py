"""cradle-kg: a governed execution runtime for AI agents.

Agents propose; the runtime disposes. The public API is small::

    from cradle_kg import Runtime, ToolSpec, ToolCall, VerifierReport, VerifyRequest

    rt = Runtime("./.cradle")
    rt.register_tool(spec, fn, lookup=...)
    rt.register_verifier("my.verifier", verify)
    outcome = rt.submit(proposal)          # -> Outcome
"""

from .errors import CradleError
from .loop.plans import PlanOutcome
from .loop.runtime import Runtime
from .records import (
    AbortPolicy,
    ActionRequest,
    IdempotencyClass,
    Outcome,
    OutcomeStatus,
    Plan,
    PlanStep,
    Proposal,
    RiskLevel,
    RuntimeDecision,
    SideEffectClass,
    Verdict,
    VerificationCheck,
    VerificationResult,
    VerificationStatus,
)
from .tools import ToolCall, ToolSpec
from .verifiers import VerifierReport, VerifyRequest

__version__ = "0.1.0"

__all__ = [
    "AbortPolicy",
    "ActionRequest",
    "CradleError",
    "IdempotencyClass",
    "Outcome",
    "OutcomeStatus",
    "Plan",
    "PlanOutcome",
    "PlanStep",
    "Proposal",
    "RiskLevel",
    "Runtime",
    "RuntimeDecision",
    "SideEffectClass",
    "ToolCall",
    "ToolSpec",
    "Verdict",
    "VerificationCheck",
    "VerificationResult",
    "VerificationStatus",
    "VerifierReport",
    "VerifyRequest",
    "__version__",
]
