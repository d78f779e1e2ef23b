"""Cedar policy evaluation."""

from .cedar import (
    PolicyEngine,
    PolicyOutcome,
    PolicySource,
    read_sources,
    validate_against_schema,
)

__all__ = ["PolicyEngine", "PolicyOutcome", "PolicySource", "read_sources",
           "validate_against_schema"]
