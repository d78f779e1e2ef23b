"""The loop: a proposal's walk, one stage per module, composed by :class:`Runtime`.

In loop order:

=====================  ================================================================
``context``            :class:`LoopContext` — the journal's one writer (append with
                       listeners), the clock, the worker lease, the configuration
``proposal``           reading a proposal; the identical one answered from the record
``policies``           the Cedar policy set in force, journaled when it changes
``gate1/``             gate 1: the checks in one ordered list, keys, limits, the decision
``approvals``          the approval rules (a projection of the journal)
``approval_flow``      asking a human, deciding, resuming the run
``execution``          the action, its intent, the approve-once, retries
``gateway``            the only caller of a tool: intent → call → observation
``gate2``              gate 2: the checks on what really happened
``commit``             verification and transition, checked by the commit hooks
``integrity``          the commit hook: integrity rules (SHACL) on the run's graph
``settlement``         commit, compensate, or escalate
``escalation``         human tasks and the repair budget
``outcomes``           the ``run.outcome`` event, and reading one back
``lease``              who is alive: the worker lease
``recovery``           dangling intents reconciled after a crash
``plans``              ordered proposals with dependencies
``runtime``            :class:`Runtime`: composes the stages; ``submit`` is the loop
=====================  ================================================================

Stages are plain classes and functions over the context; nothing outside the loop reaches
a stage's private members (``tests/test_architecture.py`` holds the package to that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import LoopContext


def __getattr__(name: str) -> Any:
    # on first use: a module of the loop (a pack's validator reads ``gate1.findings``) does
    # not bring in the context and, with it, the journals
    if name == "LoopContext":
        from .context import LoopContext

        return LoopContext
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["LoopContext"]
