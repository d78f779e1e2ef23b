"""The workflow layer's errors — defined in the one error tree, :mod:`cradle_kg.errors`.

Re-exported here so ``from cradle_kg.workflow import ModelError`` keeps working.
"""

from __future__ import annotations

from ..errors import AutonomyError, ModelError, WorkflowError

__all__ = ["AutonomyError", "ModelError", "WorkflowError"]
