"""How a workflow run ends, and what a person's cancel of it looks like in the journal.

A run ends with one ``workflow.completed`` or ``workflow.failed`` (the derived tables —
``run_state.finished``, ``open_steps``, ``starting_runs`` — read a run's end as those two
kinds). A person's cancel (``cradle-kg workflow cancel``) is a ``workflow.failed`` written
by them (its actor), whose payload says so: ``code`` :data:`CANCELLED`, ``cancelled_by``,
``note`` (their reason). Written so, every count and state that reads a run's end reads
the cancel the same way — in this version and in an older worker on the same journal —
and no derived table, journal format or PostgreSQL migration changes.
"""

from __future__ import annotations

from typing import Any

from ..errors import RunCancelledError, RunEndedError
from ..records import AuditEvent
from ..runs import CANCELLED, cancelled_by


def cancel_payload(*, step: str | None, by: str, reason: str) -> dict[str, Any]:
    """The payload of a cancel's ``workflow.failed`` (``step``: where the run waited)."""
    return {"step": step, "code": CANCELLED, "reason": f"cancelled by `{by}`: {reason}",
            "cancelled_by": by, "note": reason}


def ended_error(run_id: str, end: AuditEvent) -> RunEndedError:
    """The typed refusal of a walk, an answer or a cancel of a run that ended ``end``."""
    cancel = cancelled_by(end)
    if cancel is not None:
        by, reason = cancel
        return RunCancelledError(f"workflow run `{run_id}` was cancelled by `{by}`: {reason}",
                                 run_id=run_id, by=by, reason=reason)
    word = "completed" if end.kind == "workflow.completed" else "failed"
    return RunEndedError(f"workflow run `{run_id}` has ended: {word}", run_id=run_id,
                         ended=end.kind, hint="an ended run is only read (`workflow status`)")


__all__ = ["CANCELLED", "cancel_payload", "cancelled_by", "ended_error"]
