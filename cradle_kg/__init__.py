"""cradle-kg: a governed execution runtime for AI agents.

Agents propose; the runtime disposes. The public API is small::

    from cradle_kg import Runtime, ToolSpec, ToolCall, VerifierReport, VerifyRequest

    rt = Runtime("./.cradle")
    rt.register_tool(spec, fn, lookup=...)
    rt.register_verifier("my.verifier", verify)
    outcome = rt.submit(proposal)          # -> Outcome
"""

from typing import TYPE_CHECKING, Any

from .errors import CradleError, ToolRefused

if TYPE_CHECKING:
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

#: where each public name lives: imported on first use, so that ``import cradle_kg`` (and
#: every light CLI command) does not pay for the runtime, the graph and SHACL up front
_LAZY = {
    **dict.fromkeys(("PlanOutcome",), ".loop.plans"),
    **dict.fromkeys(("Runtime",), ".loop.runtime"),
    **dict.fromkeys(("AbortPolicy", "ActionRequest", "IdempotencyClass", "Outcome",
                     "OutcomeStatus", "Plan", "PlanStep", "Proposal", "RiskLevel",
                     "RuntimeDecision", "SideEffectClass", "Verdict", "VerificationCheck",
                     "VerificationResult", "VerificationStatus"), ".records"),
    **dict.fromkeys(("ToolCall", "ToolSpec"), ".tools"),
    **dict.fromkeys(("VerifierReport", "VerifyRequest"), ".verifiers"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
    "ToolRefused",
    "ToolSpec",
    "Verdict",
    "VerificationCheck",
    "VerificationResult",
    "VerificationStatus",
    "VerifierReport",
    "VerifyRequest",
    "__version__",
]
