"""How a proposal ended: the ``run.outcome`` event, and reading one back.

Every path through the loop ends in one outcome event — executed, denied, waiting for an
approval, escalated — about the action (or, when nothing ran, the proposal). The outcome
recorded last for an action is its answer, for a replayed key as much as for an auditor.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from ..records import RUNTIME_ACTOR, Outcome, OutcomeStatus, Verdict, VerificationStatus
from ..storage import Journal, NewEvent

#: the outcome of a decision that does not let the action run
VERDICT_STATUS = {
    Verdict.DENY: OutcomeStatus.DENIED,
    Verdict.CLARIFY: OutcomeStatus.NEEDS_CLARIFICATION,
    Verdict.REPAIR: OutcomeStatus.REPAIR,
    Verdict.REQUIRE_APPROVAL: OutcomeStatus.AWAITING_APPROVAL,
}
#: the outcome of a call that returned, by what gate 2 found
VERIFICATION_STATUS = {
    VerificationStatus.VERIFIED: OutcomeStatus.EXECUTED,
    VerificationStatus.FAILED: OutcomeStatus.VERIFICATION_FAILED,
    VerificationStatus.INCONCLUSIVE: OutcomeStatus.INCONCLUSIVE,
}


#: a record the same commit journals already, with its JSON dump: (the outcome's field
#: that holds it, the record, ``record.model_dump(mode="json")``)
Dumped = tuple[str, BaseModel, dict[str, Any]]


def outcome_body(outcome: Outcome, dumped: Sequence[Dumped] = ()) -> dict[str, Any]:
    """``outcome.model_dump(mode="json")``, with the dump of a field whose record is the
    very object ``dumped`` names (frozen: the same object, the same dump) taken as it is
    instead of dumped a second time — the same JSON (canonical JSON sorts the keys)."""
    reuse = {name: dump for name, record, dump in dumped if getattr(outcome, name) is record}
    if not reuse:
        return outcome.model_dump(mode="json")
    body = outcome.model_dump(mode="json", exclude=set(reuse))
    body.update(reuse)
    return body


def outcome_event(outcome: Outcome, subject: str, *, reconciled: bool = False,
                  at: datetime | None = None, submission: str | None = None,
                  dumped: Sequence[Dumped] = ()) -> NewEvent:
    """The ``run.outcome`` event of ``outcome`` about ``subject`` (an action or proposal);
    ``dumped``: see :func:`outcome_body`."""
    payload: dict[str, Any] = {"outcome": outcome_body(outcome, dumped)}
    if reconciled:
        payload["reconciled"] = True
    if submission:
        payload["submission"] = submission
    return NewEvent(run_id=outcome.run_id, kind="run.outcome", subject=subject,
                    actor=RUNTIME_ACTOR, at=at or (outcome.decision.decided_at
                                                   if outcome.decision else datetime.now(UTC)),
                    payload=payload)


def with_reason(outcome: Outcome, reason: str) -> Outcome:
    return outcome.model_copy(update={"reasons": (*outcome.reasons, reason)})


def recorded_outcome(journal: Journal, action_id: str) -> Outcome | None:
    """The outcome recorded last for an action, if any: one event decoded, however many
    times the action's key was submitted again since (each resubmission journals an
    ``action.replayed`` about the action: ``tests/security/test_85``)."""
    event = journal.last_for_subject(action_id, "run.outcome")
    return Outcome.model_validate(event.payload["outcome"]) if event is not None else None
