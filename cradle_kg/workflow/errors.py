"""Errors of the workflow layer, rooted in :class:`cradle_kg.errors.CradleError`.

    CradleError
    ├── ReplayDivergenceError   (cradle_kg.errors) strict replay differs from the journal
    ├── BudgetExceededError     (cradle_kg.errors) a spending limit was reached
    └── WorkflowError           a workflow or step definition that cannot run
        ├── ModelError          the model server could not be reached or answered garbage
        └── AutonomyError       an autonomy command that the step's policy refuses

They live beside the workflow package because its files are owned separately; they
belong in ``cradle_kg/errors.py`` and can move there without changing any caller that
imports them from ``cradle_kg.workflow``.
"""

from __future__ import annotations

from ..errors import CradleError


class WorkflowError(CradleError):
    code = "workflow_error"


class ModelError(WorkflowError):
    code = "model_error"


class AutonomyError(WorkflowError):
    """A refused autonomy command; ``reasons`` lists every unmet condition."""

    code = "autonomy_refused"

    def __init__(self, message: str, *, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = reasons
