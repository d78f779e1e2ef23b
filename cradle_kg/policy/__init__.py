"""Cedar policy evaluation."""

from .cedar import PolicyEngine, PolicyOutcome, PolicySource, validate_against_schema

__all__ = ["PolicyEngine", "PolicyOutcome", "PolicySource", "validate_against_schema"]
